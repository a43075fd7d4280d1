"""ESimCSE, MixCSE and ArcCSE losses against their formulas written out row by row in plain Python/numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sentcl.methods.arccse.loss import ArcCSELoss
from sentcl.methods.esimcse.loss import ESimCSELoss
from sentcl.methods.mixcse.loss import MixCSELoss


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def nll(positive: float, others: list[float]) -> float:
    """-log e^positive / (e^positive + sum e^others), with the positive's logit in the denominator once."""
    return -positive + math.log(math.exp(positive) + sum(math.exp(o) for o in others))


def views(batch: int = 5, dim: int = 7, num_views: int = 2, seed: int = 0) -> torch.Tensor:
    return torch.randn(
        batch, num_views, dim, generator=torch.Generator().manual_seed(seed), dtype=torch.float64
    )


def test_esimcse_loss_is_infonce_with_the_queue_in_the_denominator():
    z, tau = views(), 0.05
    queue = torch.randn(8, 7, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    h, hp, q = z[:, 0].numpy(), z[:, 1].numpy(), queue.numpy()
    expected = np.mean(
        [
            nll(
                cos(h[i], hp[i]) / tau,
                [cos(h[i], hp[j]) / tau for j in range(5) if j != i]
                + [cos(h[i], q[m]) / tau for m in range(8)],
            )
            for i in range(5)
        ]
    )
    got = ESimCSELoss(tau)(z, queue=queue)
    assert float(got["loss"]) == pytest.approx(expected, rel=1e-9)
    assert float(got["queue_size"]) == 8
    # the queue only ever adds to the denominator: without it the loss is smaller (here, and always)
    assert float(ESimCSELoss(tau)(z, queue=queue[:0])["loss"]) < expected


def test_esimcse_queue_gets_no_gradient_and_must_match_the_dimension():
    z = views().requires_grad_(True)
    queue = torch.randn(4, 7, dtype=torch.float64, requires_grad=True)
    ESimCSELoss(0.05)(z, queue=queue)["loss"].backward()
    assert queue.grad is None and z.grad is not None
    with pytest.raises(ValueError, match="queue must be"):
        ESimCSELoss(0.05)(views(), queue=torch.zeros(3, 6, dtype=torch.float64))


@pytest.mark.parametrize("partners", ["one", "all"])
def test_mixcse_loss_matches_the_hand_written_rows(partners: str):
    z, tau, lam, b = views(batch=4), 0.05, 0.2, 4
    h, hp = z[:, 0].numpy(), z[:, 1].numpy()

    def mix(i: int, j: int) -> np.ndarray:
        m = lam * hp[i] + (1 - lam) * hp[j]
        return m / np.linalg.norm(m)

    rows = []
    for i in range(b):
        negatives = [cos(h[i], hp[j]) / tau for j in range(b) if j != i]
        partners_i = [(i + 1) % b] if partners == "one" else [j for j in range(b) if j != i]
        mixed = [cos(h[i], mix(i, j)) / tau for j in partners_i]
        rows.append(nll(cos(h[i], hp[i]) / tau, negatives + mixed))
    got = MixCSELoss(tau, lam, partners)(z)["loss"]
    assert float(got) == pytest.approx(float(np.mean(rows)), rel=1e-9)


def test_mixcse_mixed_negatives_are_detached():
    z = views(batch=4).requires_grad_(True)
    MixCSELoss(0.05, 0.2)(z)["loss"].backward()
    # with detached mixes the positive view's gradient equals InfoNCE's one in the same denominators:
    # compare against a manual loss whose mixed negatives are built from a constant copy of h+
    z2 = z.detach().clone().requires_grad_(True)
    h, hp = z2[:, 0], z2[:, 1]
    const = hp.detach()
    mixes = torch.nn.functional.normalize(0.2 * const + 0.8 * const.roll(-1, 0), dim=-1)
    logits = (
        torch.cat(
            [
                torch.nn.functional.cosine_similarity(h[:, None], hp[None], dim=-1),
                torch.nn.functional.cosine_similarity(h, mixes, dim=-1)[:, None],
            ],
            dim=1,
        )
        / 0.05
    )
    torch.nn.functional.cross_entropy(logits, torch.arange(4)).backward()
    assert torch.allclose(z.grad, z2.grad)
    with pytest.raises(ValueError, match="batch size"):
        MixCSELoss()(views(batch=1))


def test_arccse_loss_adds_the_angular_margin_to_the_positive_and_the_triplet_on_angles():
    z, tau = views(batch=4, num_views=4), 0.05
    m, mt, w = math.radians(10), math.radians(3), 0.5
    h, hp, weak, strong = (z[:, v].numpy() for v in range(4))
    arc = []
    for i in range(4):
        theta = math.acos(cos(h[i], hp[i]))
        arc.append(nll(math.cos(theta + m) / tau, [cos(h[i], hp[j]) / tau for j in range(4) if j != i]))
    triplet = [
        max(0.0, math.acos(cos(h[i], weak[i])) - math.acos(cos(h[i], strong[i])) + mt) for i in range(4)
    ]
    got = ArcCSELoss(tau, margin_degrees=10, triplet_margin_degrees=3, triplet_weight=w)(z)
    assert float(got["arccon"]) == pytest.approx(float(np.mean(arc)), rel=1e-6)
    assert float(got["triplet"]) == pytest.approx(float(np.mean(triplet)), rel=1e-6, abs=1e-9)
    assert float(got["loss"]) == pytest.approx(float(np.mean(arc) + w * np.mean(triplet)), rel=1e-6)


def test_arccse_margin_makes_the_loss_larger_and_zero_margin_is_infonce():
    z = views(batch=4, num_views=4)
    from sentcl.objectives.infonce import info_nce

    plain = ArcCSELoss(0.05, margin_degrees=0.0, triplet_weight=0.0)(z)["loss"]
    assert float(plain) == pytest.approx(float(info_nce(z[:, 0], z[:, 1], 0.05)), rel=1e-6)
    assert float(ArcCSELoss(0.05, margin_degrees=10.0, triplet_weight=0.0)(z)["loss"]) > float(plain)


def test_esimcse_under_matryoshka_cuts_the_queue_to_each_prefix():
    from sentcl.objectives.matryoshka import matryoshka_wrap

    z, queue = views(dim=8), torch.randn(6, 8, dtype=torch.float64)
    got = matryoshka_wrap(ESimCSELoss(0.05), [8, 4])(z, queue=queue)
    expected = sum(
        float(ESimCSELoss(0.05)(z[..., :d], queue=queue[:, :d])["loss"]) for d in (8, 4)
    )  # cosine objectives: the prefix normalisation changes nothing
    assert float(got["loss"]) == pytest.approx(expected, rel=1e-9)
