"""The one step (plain and GradCache, with the MLM term), the companion hook, and ``eval_steps: 0``."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers.data import MIXED_LENGTH_SENTENCES, tiny_recipe, write_corpus
from safetensors.torch import load_file
from torch import Tensor, nn

from sentcl.config import TrainConfig, from_dict
from sentcl.methods import Method, duplicate_view
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.objectives.infonce import InfoNCE
from sentcl.objectives.mlm import MaskedLMObjective, mask_tokens, mlm_loss
from sentcl.training.batch_source import make_batch
from sentcl.training.checkpoint import STATE_FILE, load_state
from sentcl.training.step import forward_loss

SENTENCES = MIXED_LENGTH_SENTENCES
B = len(SENTENCES)


def _mlm_method(tiny_bert: Path) -> tuple[SentenceEncoder, Method, nn.Module]:
    torch.manual_seed(0)
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="cls", dropout=0.0)
    model.train()
    objective = MaskedLMObjective(InfoNCE(0.05), 0.1, 0.3, str(tiny_bert), new_head=True)
    trainable = nn.ModuleDict({"encoder": model, **objective.attach(model)})
    return model, Method(views=duplicate_view(2), objective=objective, examples=SENTENCES), trainable


def _grads(module: nn.Module) -> dict[str, Tensor]:
    grads = {n: p.grad.clone() for n, p in module.named_parameters() if p.grad is not None}
    module.zero_grad(set_to_none=True)
    return grads


@pytest.mark.parametrize("chunk", [2, 3])
def test_gradcache_with_mlm_gives_the_plain_gradient(tiny_bert: Path, chunk: int) -> None:
    model, method, trainable = _mlm_method(tiny_bert)
    batch = make_batch(SENTENCES, method, model)
    plain = forward_loss(model, batch, method, B, token_seed=5)
    plain_grads = _grads(trainable)
    cached = forward_loss(model, batch, method, B, chunk_size=chunk, token_seed=5)
    cached_grads = _grads(trainable)
    # the MLM term by hand: BERT's masks from the same seed, mean cross-entropy over the whole batch
    head = trainable["mlm"]
    special = (batch["input_ids"] == model.tokenizer.cls_token_id) | (
        batch["input_ids"] == model.tokenizer.sep_token_id
    )
    special |= batch["attention_mask"] == 0
    masked, labels = mask_tokens(
        batch["input_ids"],
        special,
        model.tokenizer.mask_token_id,
        len(model.tokenizer),
        0.3,
        torch.Generator().manual_seed(5),
    )
    with torch.no_grad():
        expected_mlm = mlm_loss(head(**{**batch, "input_ids": masked}).logits, labels)
    assert (labels != -100).sum() > 5, "enough masked positions for the test to mean something"
    torch.testing.assert_close(plain["mlm"], expected_mlm, rtol=0, atol=1e-6)
    torch.testing.assert_close(cached["mlm"], plain["mlm"], rtol=0, atol=1e-6)
    torch.testing.assert_close(cached["loss"], plain["loss"], rtol=0, atol=1e-6)
    assert plain_grads.keys() == cached_grads.keys()
    assert any(name.startswith("mlm.cls.") for name in plain_grads), "the head is trained"
    for name, grad in plain_grads.items():
        torch.testing.assert_close(cached_grads[name], grad, rtol=0, atol=1e-5, msg=f"gradient of {name}")


def _config(tiny_bert: Path, data_dir: Path, corpus: Path, out: Path, **training: Any) -> TrainConfig:

    return from_dict(TrainConfig, tiny_recipe(tiny_bert, data_dir, corpus, out, **training))


class CountingCompanion:
    """A tiny companion: counts its calls, and keeps a running checksum of the weights after each step."""

    def __init__(self) -> None:
        self.inputs_calls = 0
        self.state = {
            "steps": torch.zeros((), dtype=torch.long),
            "checksum": torch.zeros((), dtype=torch.float64),
        }

    def objective_inputs(
        self, model: nn.Module, batch: dict[str, Tensor], num_examples: int
    ) -> dict[str, Tensor]:
        assert batch["input_ids"].size(0) == 2 * num_examples  # the step's B·V rows
        assert self.inputs_calls == int(self.state["steps"]), (
            "objective_inputs before after_step, once a step"
        )
        self.inputs_calls += 1
        return {}

    def after_step(self, model: nn.Module) -> None:
        self.state["steps"] += 1
        weight = next(model.parameters()).detach().double()
        self.state["checksum"] = self.state["checksum"] * 1.5 + weight.sum()

    def state_dict(self) -> dict[str, Any]:
        return {k: v.clone() for k, v in self.state.items()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.state = {k: v.clone() for k, v in state.items()}
        self.inputs_calls = int(self.state["steps"])


def test_companion_is_called_every_step_and_resumes_exactly(
    tmp_path: Path, tiny_bert: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    from sentcl.training import loop

    companions: list[CountingCompanion] = []

    def build_with_companion(*args: Any) -> Method:
        method = real_build(*args)
        method.companion = CountingCompanion()
        companions.append(method.companion)
        return method

    real_build = loop.build_method
    monkeypatch.setattr(loop, "build_method", build_with_companion)
    corpus = write_corpus(tmp_path / "corpus.txt", 40)
    cfg = _config(tiny_bert, data_dir, corpus, tmp_path / "run", eval_steps=4)
    straight = loop.train(cfg)
    assert straight.global_step == 4 and int(companions[0].state["steps"]) == 4
    assert companions[0].inputs_calls == 4
    expected = companions[0].state["checksum"].item()
    saved = load_state(tmp_path / "run" / "checkpoint-2" / STATE_FILE)["companion"]
    assert int(saved["steps"]) == 2 and saved["checksum"].item() != expected
    shutil.rmtree(tmp_path / "run" / "checkpoint-4")  # as if the job died after step 2's checkpoint
    loop.train(cfg, resume=True)
    resumed = companions[-1]
    assert int(resumed.state["steps"]) == 4 and resumed.inputs_calls == 4
    assert resumed.state["checksum"].item() == expected  # bit for bit: state and weights resumed exactly
    final = load_state(tmp_path / "run" / "checkpoint-4" / STATE_FILE)["companion"]
    assert final["checksum"].item() == expected


def test_eval_steps_zero_never_evaluates_and_keeps_the_last_model(
    tmp_path: Path, tiny_bert: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from sentcl.training import evaluation_hooks, loop

    def no_dev_score(*args: Any, **kwargs: Any) -> tuple[float, None]:
        raise AssertionError("eval_steps: 0 must not compute a dev score")

    monkeypatch.setattr(evaluation_hooks, "dev_evaluation", no_dev_score)
    corpus = write_corpus(tmp_path / "corpus.txt", 40)
    result = loop.train(_config(tiny_bert, data_dir, corpus, tmp_path / "run", eval_steps=0))
    out = tmp_path / "run"
    assert result.best_step == 4 and result.best_score is None
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert not [r for r in records if r["event"] == "eval"]
    summary = json.loads((out / "results.json").read_text())
    assert summary["best_step"] == 4 and summary["best_dev_score"] is None
    assert "stsb_dev" in summary["results"], "the final evaluation still runs, on the last model"
    best = load_file(str(out / "best" / "model.safetensors"))
    last = load_file(str(out / "checkpoint-4" / "model" / "model.safetensors"))
    assert best.keys() == last.keys()
    assert all(torch.equal(best[k], last[k]) for k in best)
