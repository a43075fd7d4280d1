"""ESimCSE, MixCSE and ArcCSE score with the shared InfoNCE (``sentcl.objectives.infonce``): each loss equals,
bit for bit (and in its gradients, to float rounding: autograd sums a shared input's two branches in another
order), the cross-entropy it hand-wrote before, and a numpy log-softmax."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from sentcl.methods.arccse.loss import angles, arc_con
from sentcl.methods.esimcse.loss import queue_info_nce
from sentcl.methods.mixcse.loss import mixcse_loss, mixed_negatives
from sentcl.objectives.infonce import info_nce, info_nce_from_similarities

TAU = 0.05


def cosines(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """cos(a_i, b_j) written out: (N, D), (M, D) -> (N, M)."""
    return (a / a.norm(dim=-1, keepdim=True)) @ (b / b.norm(dim=-1, keepdim=True)).T  # (N, M)


def numpy_info_nce(logits: np.ndarray) -> float:
    """Mean of -log softmax(logits)_ii, in float64 numpy: logits (B, M), already divided by tau."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-np.mean(np.diag(log_softmax[:, : logits.shape[0]])))


def old_queue_info_nce(anchors, positives, queue, temperature):
    """ESimCSE's loss as it was written before it called the shared InfoNCE."""
    from sentcl.similarity import cosine_matrix

    logits = cosine_matrix(anchors, positives)  # (B, B)
    if queue is not None and queue.numel():
        logits = torch.cat([logits, cosine_matrix(anchors, queue.detach())], dim=1)  # (B, B + Q)
    return F.cross_entropy(logits / temperature, torch.arange(anchors.size(0)))


def old_mixcse_loss(anchors, positives, lam, temperature, partners):
    """MixCSE's loss as it was written before it called the shared InfoNCE."""
    from sentcl.similarity import cosine_matrix

    logits = cosine_matrix(anchors, positives)  # (B, B)
    mixes = mixed_negatives(positives, lam, partners)
    if partners == "one":
        extra = F.cosine_similarity(anchors, mixes, dim=-1)[:, None]  # (B, 1)
    else:
        extra = F.cosine_similarity(anchors[:, None, :], mixes, dim=-1)  # (B, B)
        extra = extra.masked_fill(torch.eye(anchors.size(0), dtype=torch.bool), float("-inf"))
    logits = torch.cat([logits, extra], dim=1)  # (B, B + 1) or (B, 2B)
    return F.cross_entropy(logits / temperature, torch.arange(anchors.size(0)))


def old_arc_con(anchors, positives, margin, temperature):
    """ArcCSE's ArcCon as it was written before it called the shared InfoNCE."""
    from sentcl.similarity import cosine_matrix

    cos = cosine_matrix(anchors, positives)  # (B, B)
    eye = torch.eye(cos.size(0), dtype=torch.bool)
    logits = torch.where(eye, torch.diag_embed(torch.cos(angles(cos.diagonal()) + margin)), cos)  # (B, B)
    return F.cross_entropy(logits / temperature, torch.arange(cos.size(0)))


def same_loss_and_gradients(new, old, *tensors: torch.Tensor) -> None:
    """``new(*tensors)`` and ``old(*tensors)`` are equal bit for bit; their gradients to float32 rounding."""
    results = []
    for fn in (new, old):
        leaves = [t.clone().requires_grad_(True) for t in tensors]
        loss = fn(*leaves)
        loss.backward()
        results.append((loss.detach(), [leaf.grad for leaf in leaves]))
    (new_loss, new_grads), (old_loss, old_grads) = results
    assert torch.equal(new_loss, old_loss), (new_loss.item(), old_loss.item())
    for a, b in zip(new_grads, old_grads, strict=True):
        assert torch.allclose(a, b, rtol=1e-6, atol=1e-7)


def batch(rows: int, dim: int = 16, seed: int = 0) -> torch.Tensor:
    return torch.randn(rows, dim, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("queue_rows", [0, 5])
def test_esimcse_is_the_shared_info_nce_with_the_queue_as_negatives(queue_rows: int) -> None:
    anchors, positives, queue = batch(6, seed=1), batch(6, seed=2), batch(queue_rows, seed=3)
    same_loss_and_gradients(
        lambda a, p: queue_info_nce(a, p, queue, TAU),
        lambda a, p: old_queue_info_nce(a, p, queue, TAU),
        anchors,
        positives,
    )
    logits = cosines(anchors, torch.cat([positives, queue])).double().numpy() / TAU  # (B, B + Q)
    assert queue_info_nce(anchors, positives, queue, TAU).item() == pytest.approx(
        numpy_info_nce(logits), rel=1e-5
    )


@pytest.mark.parametrize("partners", ["one", "all"])
def test_mixcse_is_the_shared_info_nce_with_the_mixes_appended(partners: str) -> None:
    anchors, positives = batch(5, seed=4), batch(5, seed=5)
    same_loss_and_gradients(
        lambda a, p: mixcse_loss(a, p, 0.2, TAU, partners),
        lambda a, p: old_mixcse_loss(a, p, 0.2, TAU, partners),
        anchors,
        positives,
    )
    if partners == "one":  # row i's one mixed negative: 0.2 h_i^+ + 0.8 h_{i+1}^+
        mixes = 0.2 * positives + 0.8 * positives.roll(-1, dims=0)  # (B, D)
        extra = (cosines(anchors, mixes).diagonal()[:, None]).double().numpy()  # (B, 1)
        logits = (
            np.concatenate([cosines(anchors, positives).double().numpy(), extra], axis=1) / TAU
        )  # (B, B + 1)
        assert mixcse_loss(anchors, positives, 0.2, TAU).item() == pytest.approx(
            numpy_info_nce(logits), rel=1e-5
        )


def test_arccse_is_the_shared_info_nce_with_a_margin_on_the_positive() -> None:
    anchors, positives = batch(6, seed=6), batch(6, seed=7)
    margin = math.radians(10.0)
    same_loss_and_gradients(
        lambda a, p: arc_con(a, p, margin, TAU),
        lambda a, p: old_arc_con(a, p, margin, TAU),
        anchors,
        positives,
    )
    cos = cosines(anchors, positives).double().numpy()  # (B, B)
    np.fill_diagonal(cos, np.cos(np.arccos(np.clip(np.diag(cos), -1, 1)) + margin))
    assert arc_con(anchors, positives, margin, TAU).item() == pytest.approx(
        numpy_info_nce(cos / TAU), rel=1e-5
    )


def test_info_nce_with_extra_similarities_equals_the_candidates_appended() -> None:
    """Appending negatives' similarities is the same as appending the negatives themselves as candidates."""
    anchors, positives, negatives = batch(4, seed=8), batch(4, seed=9), batch(3, seed=10)
    from sentcl.similarity import cosine_matrix

    appended = info_nce(anchors, positives, TAU, extra_similarities=cosine_matrix(anchors, negatives))
    as_candidates = info_nce(anchors, torch.cat([positives, negatives]), TAU)
    assert torch.allclose(appended, as_candidates, atol=1e-6)
    logits = cosine_matrix(anchors, positives)  # (B, B)
    assert torch.equal(info_nce_from_similarities(logits, TAU), info_nce(anchors, positives, TAU))
