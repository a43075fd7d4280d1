"""The cosent method and the matryoshka wrapper as the recipes build them: views, meta, loss of a real batch."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from sentcl.config import ConfigError, TrainConfig, load_config
from sentcl.data.readers import Corpus
from sentcl.data.sources import read_training_data
from sentcl.methods import build_method
from sentcl.methods.cosent.loss import CoSENT
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.objectives.infonce import InfoNCE
from sentcl.objectives.matryoshka import Matryoshka
from sentcl.training.batch_source import make_batch
from sentcl.training.step import embed_views

ROOT = Path(__file__).resolve().parents[2]
ROWS = [
    ("a man plays a guitar", "a man plays music", 4.5),
    ("the dog runs near the river", "the cat sits", 0.5),
    ("the stock price falls", "a price falls", 3.0),
    ("a child reads a book", "a child is reading", 4.0),
    ("the old car is on the road", "a bird sings", 0.0),
]


def _scored(tmp_path: Path) -> Path:
    path = tmp_path / "train.tsv"
    path.write_text("".join(f"{a}\t{b}\t{s}\n" for a, b, s in ROWS), encoding="utf-8")
    return path


def _cfg(recipe: str, tiny_bert: Path, *overrides: str) -> TrainConfig:
    return load_config(
        TrainConfig, ROOT / "configs" / recipe, [f"model.name_or_path={tiny_bert}", *overrides]
    )


def test_cosent_method_loss_of_a_batch_equals_the_double_loop(tiny_bert: Path, tmp_path: Path) -> None:
    cfg = _cfg("cosent.yaml", tiny_bert, "data.reader=scored_pairs")
    corpus = read_training_data("scored_pairs", _scored(tmp_path))
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg", dropout=0.0)
    method = build_method(cfg, corpus, model.tokenizer)
    assert isinstance(method.objective, CoSENT) and method.objective.scale == 20.0
    examples = method.examples
    meta = method.meta(examples)
    assert meta["scores"].tolist() == [r[2] for r in ROWS]
    z = embed_views(model, make_batch(examples, method, model), method, len(examples))  # (B, 2, D)
    loss = float(method.objective(z, **meta)["loss"].detach())
    # by hand, from the model's own embeddings of each side
    u, v = model.encode([r[0] for r in ROWS]), model.encode([r[1] for r in ROWS])
    cos = [float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) for a, b in zip(u, v, strict=True)]
    total = 1.0
    for i in range(len(ROWS)):
        for j in range(len(ROWS)):
            if ROWS[i][2] > ROWS[j][2]:
                total += math.exp(20 * (cos[j] - cos[i]))
    assert loss == pytest.approx(math.log(total), rel=1e-4)


def test_cosent_needs_scored_pairs(tiny_bert: Path, tmp_path: Path) -> None:
    cfg = _cfg("cosent.yaml", tiny_bert)
    lines = Corpus(tmp_path / "x.txt", ["a sentence", "another one"])
    with pytest.raises(ConfigError, match="scored_pairs or stsb"):
        build_method(cfg, lines, None)  # type: ignore[arg-type]


def test_matryoshka_recipe_wraps_infonce(tiny_bert: Path) -> None:
    cfg = _cfg("matryoshka.yaml", tiny_bert, "objective.matryoshka_dims=[32,16,8]")
    method = build_method(cfg, Corpus(Path("x"), ["a", "b"]), None)  # type: ignore[arg-type]
    objective = method.objective
    while not isinstance(objective, Matryoshka):  # another wrapper (MLM) may sit outside
        objective = objective.inner  # type: ignore[attr-defined]
    assert objective.dims == [32, 16, 8] and isinstance(objective.inner, InfoNCE)
    assert objective.inner.temperature == 0.05
    z = torch.randn(2, 2, 32, generator=torch.Generator().manual_seed(0))
    want = sum(float(InfoNCE(0.05)(z[..., :d])["loss"]) for d in (32, 16, 8))
    assert float(method.objective(z)["loss"]) == pytest.approx(want, rel=1e-5)
    plain = build_method(_cfg("demo.yaml", tiny_bert), Corpus(Path("x"), ["a", "b"]), None)  # type: ignore[arg-type]
    assert not isinstance(plain.objective, Matryoshka)


@pytest.mark.parametrize("recipe", ["matryoshka.yaml", "cosent.yaml"])
def test_training_with_gradient_cache_logs_the_plain_losses(
    recipe: str, tiny_bert: Path, tmp_path: Path, data_dir: Path
) -> None:
    """Through the real loop: 2 steps with GradCache chunks of 2 give the plain steps' losses (dropout off)."""
    import json

    from sentcl.cli import main

    train = _scored(tmp_path) if recipe == "cosent.yaml" else ROOT / "README.md"
    losses = {}
    for chunk in (0, 2):
        out = tmp_path / f"run{chunk}"
        sets = [
            f"model.name_or_path={tiny_bert}",
            f"data.train_file={train}",
            "training.batch_size=4",
            "training.max_steps=2",
            "training.eval_steps=0",
            "training.save_steps=0",
            "training.log_steps=1",
            "training.progress=false",
            "eval.final_tasks=[]",
            "eval.compare_with_start=false",
            f"training.gradient_cache_chunk={chunk}",
            "model.dropout=0.0",  # chunked forwards draw other dropout masks than one forward
            f"training.output_dir={out}",
        ]
        sets += (
            ["data.reader=scored_pairs"] if recipe == "cosent.yaml" else ["objective.matryoshka_dims=[32,8]"]
        )
        args = ["train", "--config", str(ROOT / "configs" / recipe), "--data-dir", str(data_dir)]
        assert main(args + [x for s in sets for x in ("--set", s)]) == 0
        records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
        losses[chunk] = [r["loss"] for r in records if r["event"] == "train"]
    assert len(losses[0]) == 2
    assert losses[2] == pytest.approx(losses[0], abs=1e-5)
