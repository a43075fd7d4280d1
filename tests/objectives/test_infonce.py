"""Unsupervised SimCSE's InfoNCE against a hand-written loop, and dropout as the augmentation."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from sentcl.methods.unsup_simcse.options import UnsupSimCSEOptions
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.objectives.infonce import InfoNCE


def reference_loss(z: np.ndarray, temperature: float) -> float:
    """-mean_i log( exp(cos(h_i, h_i+)/t) / sum_j exp(cos(h_i, h_j+)/t) ), written as plain loops."""
    batch = z.shape[0]
    total = 0.0
    for i in range(batch):
        a = z[i, 0]
        sims = []
        for j in range(batch):
            p = z[j, 1]
            sims.append(float(a @ p) / (math.sqrt(float(a @ a)) * math.sqrt(float(p @ p))) / temperature)
        denominator = sum(math.exp(s) for s in sims)  # the positive j == i is in the denominator
        total += -math.log(math.exp(sims[i]) / denominator)
    return total / batch


@pytest.mark.parametrize("temperature", [0.05, 0.5, 1.0])
def test_infonce_matches_loop(temperature: float) -> None:
    rng = np.random.default_rng(0)
    z = rng.normal(size=(6, 2, 5))
    got = InfoNCE(temperature)(torch.tensor(z))["loss"].item()
    assert got == pytest.approx(reference_loss(z, temperature), rel=1e-9, abs=1e-9)


def test_infonce_gradient_matches_finite_difference() -> None:
    rng = np.random.default_rng(1)
    z0 = rng.normal(size=(4, 2, 3))
    z = torch.tensor(z0, requires_grad=True)
    InfoNCE(0.1)(z)["loss"].backward()
    eps = 1e-6
    for index in [(0, 0, 0), (2, 1, 2), (3, 0, 1)]:
        plus, minus = z0.copy(), z0.copy()
        plus[index] += eps
        minus[index] -= eps
        numeric = (reference_loss(plus, 0.1) - reference_loss(minus, 0.1)) / (2 * eps)
        assert z.grad[index].item() == pytest.approx(numeric, rel=1e-5, abs=1e-7)


def test_identical_views_far_from_the_rest_give_near_zero_loss() -> None:
    # one-hot rows: each pair of views identical (cos 1), all other sentences orthogonal (cos 0)
    eye = torch.eye(8, dtype=torch.float64)  # float64: the expected loss (1.4e-8) underflows in float32
    z = torch.stack([eye, eye], dim=1)  # (8, 2, 8)
    loss = InfoNCE(0.05)(z)["loss"].item()
    expected = math.log(1 + 7 * math.exp(-1 / 0.05))  # 7 negatives at logit 0 vs the positive at 1/tau
    assert loss == pytest.approx(expected, rel=1e-6)
    assert loss < 1e-7


def test_swapping_positives_raises_the_loss() -> None:
    eye = torch.eye(4)
    z = torch.stack([eye, eye.roll(1, dims=0)], dim=1)  # positives belong to another sentence
    assert InfoNCE(0.05)(z)["loss"].item() > 10


def test_rejects_bad_shapes_and_temperature() -> None:
    with pytest.raises(ValueError, match="temperature"):  # checked once, by the options class
        UnsupSimCSEOptions(temperature=0.0)
    with pytest.raises(ValueError, match=r"\(batch, 2, dim\)"):
        InfoNCE()(torch.zeros(4, 3, 5))


def test_dropout_makes_the_two_views_differ(tiny_bert: Path) -> None:
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="cls", dropout=0.1)
    batch = model.tokenize(["a man is playing guitar", "a man is playing guitar"])
    torch.manual_seed(0)
    model.train()
    z = model(**batch)
    assert not torch.allclose(z[0], z[1]), "train mode: each row gets its own dropout mask"
    model.eval()
    with torch.no_grad():
        z = model(**batch)
    torch.testing.assert_close(z[0], z[1])
