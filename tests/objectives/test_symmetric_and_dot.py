"""The symmetric (NT-Xent, Chen et al.'s SimCLR) loss and the dot-product similarity (SimCSE Table D.1), against loops written out here."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from sentcl.config import TrainConfig, load_config
from sentcl.data.readers import Corpus
from sentcl.methods import build_method
from sentcl.objectives.infonce import InfoNCE
from sentcl.objectives.supervised import SupervisedInfoNCE


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _z(batch: int, views: int, dim: int, seed: int) -> torch.Tensor:
    return torch.randn(batch, views, dim, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_symmetric_loss_against_seed_formula() -> None:
    z = _z(4, 2, 5, seed=1)
    tau = 0.05
    # NT-Xent: views interleaved [A1, B1, A2, B2, ...]; 2N x 2N cosine matrix, diagonal masked, CE on every row
    rows = [z[i, v].numpy() for i in range(4) for v in range(2)]
    total = 0.0
    for r in range(8):
        partner = r + 1 if r % 2 == 0 else r - 1
        denominator = sum(math.exp(_cos(rows[r], rows[c]) / tau) for c in range(8) if c != r)
        total += -math.log(math.exp(_cos(rows[r], rows[partner]) / tau) / denominator)
    got = InfoNCE(tau, symmetric=True)(z)["loss"].item()
    assert got == pytest.approx(total / 8, rel=1e-10)
    assert got != pytest.approx(InfoNCE(tau)(z)["loss"].item(), rel=1e-3)  # not eq. 1


def test_symmetric_is_opt_in_from_the_config() -> None:
    default = build_method(load_config(TrainConfig), Corpus(Path("x"), ["a", "b"]), tokenizer=None)
    assert default.objective.symmetric is False
    cfg = load_config(TrainConfig, None, ["objective.symmetric=true"])
    assert build_method(cfg, Corpus(Path("x"), ["a", "b"]), tokenizer=None).objective.symmetric is True


def test_dot_product_infonce_against_loop() -> None:
    z = _z(5, 2, 3, seed=2)
    h = z.numpy()
    expected = 0.0
    for i in range(5):
        logits = np.array([h[i, 0] @ h[j, 1] for j in range(5)])  # no normalisation, tau = 1
        expected += -(logits[i] - np.log(np.exp(logits).sum())) / 5
    assert InfoNCE(1.0, similarity="dot")(z)["loss"].item() == pytest.approx(expected, rel=1e-10)


def test_dot_product_supervised_against_loop() -> None:
    z = _z(4, 3, 3, seed=3)  # (premise, entailment, contradiction)
    h, tau = z.numpy(), 0.5
    expected = 0.0
    for i in range(4):
        logits = [h[i, 0] @ h[j, 1] / tau for j in range(4)] + [h[i, 0] @ h[j, 2] / tau for j in range(4)]
        expected += -(logits[i] - np.log(np.exp(logits).sum())) / 4
    got = SupervisedInfoNCE(tau, similarity="dot")(z)["loss"].item()
    assert got == pytest.approx(expected, rel=1e-10)
    cfg = load_config(TrainConfig, None, ["objective.name=sup_simcse", "objective.similarity=dot"])
    method = build_method(cfg, Corpus(Path("x"), [("a", "b", "c")]), tokenizer=None)
    assert method.objective.similarity == "dot"
