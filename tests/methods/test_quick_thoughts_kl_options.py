"""Quick-Thoughts from the config: the KL form's options reach the objective; pairless blocks are dropped, not a crash."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch

from sentcl.cli import main
from sentcl.config import TrainConfig, load_config
from sentcl.data.ordered import OrderedSentence, contiguous_batches
from sentcl.data.readers import Corpus
from sentcl.methods import build_method
from sentcl.training.optim import build_optimizer

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "configs" / "quick_thoughts_kl.yaml"


def test_recipe_has_the_seeds_settings() -> None:
    cfg = load_config(TrainConfig, RECIPE)
    o, t = cfg.objective, cfg.training
    assert (o.quick_thoughts_reduction, o.quick_thoughts_diagonal) == ("kl", "zero")
    assert (t.batch_size, t.learning_rate, t.max_grad_norm, t.weight_decay) == (50, 1e-5, 2.0, 0.0)
    method = build_method(cfg, Corpus(Path("x"), [OrderedSentence("a", 0, 0)]), tokenizer=None)
    assert (method.objective.reduction, method.objective.diagonal) == ("kl", "zero")


def test_adamw_without_weight_decay_is_plain_adam() -> None:
    torch.manual_seed(0)
    a = torch.nn.Linear(4, 3)
    b = torch.nn.Linear(4, 3)
    b.load_state_dict(a.state_dict())
    ours = build_optimizer(a, 1e-2, weight_decay=0.0)
    adam = torch.optim.Adam(b.parameters(), lr=1e-2)
    for step in range(5):
        x = torch.randn(8, 4, generator=torch.Generator().manual_seed(step))
        for model, opt in ((a, ours), (b, adam)):
            opt.zero_grad()
            model(x).pow(2).sum().backward()
            opt.step()
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-7)


def test_pairless_blocks_are_dropped_and_logged(caplog) -> None:  # noqa: ANN001
    # 65 sentences of one document, batch 64: the trailing block holds one sentence
    one_doc = [OrderedSentence(f"s{i}", 0, i) for i in range(65)]
    with caplog.at_level(logging.WARNING, logger="sentcl.data.ordered"):
        out = contiguous_batches(65, 64, seed=0, epoch=0, examples=one_doc)
    assert out == [list(range(64))]
    assert "dropped 1 of 2 blocks" in caplog.text and "(1 sentences)" in caplog.text
    # a block whose sentences are all in different documents has no neighbour pair either
    singles = [OrderedSentence("a", 0, 0), OrderedSentence("b", 0, 1)] + [
        OrderedSentence(f"d{d}", d, 0) for d in range(1, 4)
    ]
    assert contiguous_batches(5, 2, seed=0, epoch=0, examples=singles) == [[0, 1]]


def test_65_sentences_batch_64_trains(tmp_path: Path, tiny_bert: Path, data_dir: Path) -> None:
    corpus = tmp_path / "ordered.txt"
    corpus.write_text(
        "\n".join(f"sentence number {i} of the story" for i in range(65)) + "\n", encoding="utf-8"
    )
    args = ["train", "--config", str(RECIPE), "--data-dir", str(data_dir)]
    for override in (
        f"model.name_or_path={tiny_bert}",
        f"data.train_file={corpus}",
        "training.batch_size=64",
        "training.epochs=2",
        "training.max_steps=null",
        "training.eval_steps=0",
        "training.save_steps=0",
        "training.log_steps=1",
        "training.progress=false",
        "eval.final_tasks=[stsb_dev]",
        f"training.output_dir={tmp_path / 'run'}",
    ):
        args += ["--set", override]
    assert main(args) == 0
    records = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if r["event"] == "train"] == [1, 2]  # one 64-block per epoch
