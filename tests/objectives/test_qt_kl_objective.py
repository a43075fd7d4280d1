"""Quick-Thoughts' KL form against the formula written out: f·gᵀ, diagonal 0, softmax, KL to row targets."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sentcl.methods.quick_thoughts.loss import QuickThoughts


def _kl_loop(u: np.ndarray, v: np.ndarray, neighbours: dict[int, list[int]]) -> float:
    batch = len(u)
    rows = []
    for i in range(batch):
        if not neighbours[i]:
            continue
        scores = [0.0 if k == i else float(u[i] @ v[k]) for k in range(batch)]  # diagonal set to 0
        z = sum(math.exp(s) for s in scores)
        p = [math.exp(s) / z for s in scores]
        t = [1.0 / len(neighbours[i]) if k in neighbours[i] else 0.0 for k in range(batch)]
        rows.append(sum(t[k] * math.log(t[k] / p[k]) for k in range(batch) if t[k] > 0))
    return float(np.mean(rows))


def test_kl_zero_diagonal_against_loop() -> None:
    g = torch.Generator().manual_seed(21)
    z = torch.randn(6, 2, 5, generator=g, dtype=torch.float64)  # (B, 2, D): f(s_i), g(s_i)
    doc_ids = torch.tensor([0, 0, 0, 0, 1, 1])
    neighbours = {0: [1], 1: [0, 2], 2: [1, 3], 3: [2], 4: [5], 5: [4]}
    got = QuickThoughts(reduction="kl", diagonal="zero")(z, doc_ids=doc_ids)["loss"].item()
    expected = _kl_loop(z[:, 0].numpy(), z[:, 1].numpy(), neighbours)
    assert got == pytest.approx(expected, rel=1e-10)
    # KL = row cross-entropy - entropy of the targets: same gradient as "rows", a different value
    rows = QuickThoughts(reduction="rows", diagonal="zero")(z, doc_ids=doc_ids)["loss"].item()
    entropy = np.mean([math.log(len(n)) for n in neighbours.values()])
    assert rows - got == pytest.approx(entropy, rel=1e-10) and entropy > 0


def test_kl_is_zero_when_softmax_matches_targets() -> None:
    # two sentences, each the other's only neighbour; scores u_i·v_j huge off the diagonal -> p = t, KL -> 0
    z = torch.tensor([[[30.0, 0.0], [0.0, 1.0]], [[0.0, 30.0], [1.0, 0.0]]], dtype=torch.float64)
    assert QuickThoughts(reduction="kl", diagonal="zero")(z)["loss"].item() == pytest.approx(0.0, abs=1e-10)
