"""Contrastive Tension, in-batch: the loss equals a hand-written loop over the (B, B) scaled cosine matrix, both
directions; the second encoder starts as a copy of the first, trains on its own and stays out of the saved model."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModel

import sentcl
from sentcl.config import TrainConfig, load_config
from sentcl.data.readers import Corpus
from sentcl.methods import build_method
from sentcl.methods.contrastive_tension.loss import contrastive_tension_loss
from sentcl.methods.views import SENTENCE_IDS, SENTENCE_MASK, trim_tokens
from sentcl.modeling.encoder import SentenceEncoder

SENTENCES = ["a man plays a guitar", "the dog runs in the garden", "stock prices fall", "a cat sits on a car"]


def reference_loss(f: np.ndarray, g: np.ndarray, scale: float) -> float:
    """(1/2B) sum_i [-log softmax_j(s cos(f_i, g_j))_i - log softmax_j(s cos(g_i, f_j))_i], as loops."""

    def cos(a: np.ndarray, b: np.ndarray) -> float:
        return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))

    total = 0.0
    for i in range(len(f)):
        for anchors, candidates in ((f, g), (g, f)):
            logits = [scale * cos(anchors[i], candidates[j]) for j in range(len(f))]
            top = max(logits)
            total -= logits[i] - (top + math.log(sum(math.exp(x - top) for x in logits)))
    return total / (2 * len(f))


@pytest.mark.parametrize("scale", [1.0, 20.0, 50.0])
def test_loss_equals_the_loop(scale: float) -> None:
    rng = np.random.default_rng(int(scale))
    f, g = rng.standard_normal((5, 7)), rng.standard_normal((5, 7))
    got = contrastive_tension_loss(
        torch.from_numpy(f), torch.from_numpy(g), torch.tensor(math.log(scale), dtype=torch.float64)
    )
    assert float(got) == pytest.approx(reference_loss(f, g, scale), rel=1e-9)


def test_the_method_scores_its_two_encoders(tiny_bert: Path) -> None:
    cfg = load_config(
        TrainConfig, None, [f"model.name_or_path={tiny_bert}", "objective.name=contrastive_tension"]
    )
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg", dropout=0.1)
    method = build_method(cfg, Corpus(Path("x"), SENTENCES), model.tokenizer)
    partner = method.objective.attach(model)["tension_copy"]
    copy = partner.encoder
    assert copy is not model and all(
        torch.equal(a, b) and a is not b for a, b in zip(model.parameters(), copy.parameters(), strict=True)
    )
    with torch.no_grad():  # two different encoders: disturb the copy so that f and g differ
        for p in copy.parameters():
            p.add_(0.01 * torch.randn_like(p))
    model.eval(), copy.eval()
    meta = method.meta(SENTENCES)
    ids, mask = trim_tokens(meta[SENTENCE_IDS], meta[SENTENCE_MASK])
    f = model(input_ids=ids, attention_mask=mask)  # (B, D)
    got = float(method.objective(f.unsqueeze(1), **meta)["loss"].detach())
    g = copy(input_ids=ids, attention_mask=mask)
    want = reference_loss(f.detach().double().numpy(), g.detach().double().numpy(), 20.0)
    assert got == pytest.approx(want, rel=1e-5)


def test_trains_and_keeps_the_copy_out_of_the_model(
    tiny_bert: Path, corpus_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    overrides = [
        f"model.name_or_path={tiny_bert}",
        "model.pooler=avg",
        "objective.name=contrastive_tension",
        f"data.train_file={corpus_file}",
        f"training.output_dir={out}",
        "training.batch_size=8",
        "training.max_steps=3",
        "training.learning_rate=1e-3",
        "training.eval_steps=0",
        "training.save_steps=0",
        "training.log_steps=1",
        "training.progress=false",
        "eval.final_tasks=[]",
        "eval.compare_with_start=false",
    ]
    sentcl.train(load_config(TrainConfig, None, overrides))
    folder = out / "best"
    saved = AutoModel.from_pretrained(folder)
    state = torch.load(next(out.glob("checkpoint-*")) / "training_state.pt", weights_only=True)
    text = str(state)
    assert "tension_copy" in text and "log_scale" in text  # the copy is kept for resuming only
    assert not (folder / "context_encoder").exists()
    assert sum(p.numel() for p in saved.parameters()) == sum(
        p.numel() for p in AutoModel.from_pretrained(tiny_bert).parameters()
    )
    lines = (out / "metrics.jsonl").read_text(encoding="utf-8")
    assert '"scale"' in lines  # the learnt scale is logged
