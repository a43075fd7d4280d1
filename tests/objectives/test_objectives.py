"""Objectives against hand-written numpy loops (supervised SimCSE, Quick-Thoughts, cutoff triplet, MLM)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from sentcl.methods.cutoff_triplet.loss import CutoffTriplet
from sentcl.methods.quick_thoughts.loss import (
    QuickThoughts,
    neighbour_targets,
    quick_thoughts_embedding,
    quick_thoughts_loss,
)
from sentcl.methods.sup_simcse.options import SupSimCSEOptions
from sentcl.objectives import SupervisedInfoNCE, add_mlm, mask_tokens, mlm_loss


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _views(batch: int, views: int, dim: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(batch, views, dim, generator=gen, dtype=torch.float64)


def _infonce_loop(anchors: np.ndarray, positives: np.ndarray, tau: float) -> float:
    losses = []
    for i in range(len(anchors)):
        logits = [_cos(anchors[i], positives[j]) / tau for j in range(len(positives))]
        losses.append(-(logits[i] - math.log(sum(math.exp(x) for x in logits))))
    return float(np.mean(losses))


# ------------------------------------------------------------------ supervised SimCSE


def test_supervised_without_weight_is_cross_entropy_over_concatenated_logits() -> None:
    z = _views(5, 3, 6, seed=0)
    h = z.numpy()
    tau = 0.05
    logits = np.zeros((5, 10))
    for i in range(5):
        for j in range(5):
            logits[i, j] = _cos(h[i, 0], h[j, 1]) / tau
            logits[i, 5 + j] = _cos(h[i, 0], h[j, 2]) / tau
    expected = F.cross_entropy(torch.tensor(logits), torch.arange(5)).item()
    got = SupervisedInfoNCE()(z)["loss"].item()
    assert got == pytest.approx(expected, rel=1e-10)


def _supervised_loop(h: np.ndarray, tau: float, w: float) -> float:
    alpha = math.exp(w)
    batch, views, _ = h.shape
    losses = []
    for i in range(batch):
        numerator = math.exp(_cos(h[i, 0], h[i, 1]) / tau)
        denominator = sum(math.exp(_cos(h[i, 0], h[j, 1]) / tau) for j in range(batch))
        for k in range(2, views):
            for j in range(batch):
                weight = alpha if j == i else 1.0
                denominator += weight * math.exp(_cos(h[i, 0], h[j, k]) / tau)
        losses.append(-math.log(numerator / denominator))
    return float(np.mean(losses))


def test_supervised_hard_negative_weight_multiplies_own_negative_by_alpha() -> None:
    z = _views(4, 3, 8, seed=1)
    got = SupervisedInfoNCE(temperature=0.1, hard_negative_weight=0.7)(z)["loss"].item()
    assert got == pytest.approx(_supervised_loop(z.numpy(), 0.1, 0.7), rel=1e-10)
    # w changes the loss (w = 0 is the other reference)
    assert got != pytest.approx(_supervised_loop(z.numpy(), 0.1, 0.0), rel=1e-6)


def test_supervised_extra_hard_negatives_add_column_blocks() -> None:
    z = _views(4, 4, 6, seed=2)
    objective = SupervisedInfoNCE(temperature=0.2, hard_negative_weight=0.3, num_hard_negatives=2)
    assert objective.num_views == 4
    assert objective(z)["loss"].item() == pytest.approx(_supervised_loop(z.numpy(), 0.2, 0.3), rel=1e-10)


def test_supervised_default_temperature_and_view_check() -> None:
    objective = SupervisedInfoNCE()
    assert objective.temperature == 0.05
    with pytest.raises(ValueError, match=r"\(batch, 3, dim\)"):
        objective(_views(4, 2, 6, seed=3))
    with pytest.raises(ValueError, match="temperature"):  # checked once, by the options class
        SupSimCSEOptions(temperature=0.0)


# ------------------------------------------------------------------ Quick-Thoughts


def _pairs(mask: torch.Tensor) -> set[tuple[int, int]]:
    return {(int(i), int(j)) for i, j in mask.nonzero().tolist()}


def test_quick_thoughts_targets_on_five_sentences() -> None:
    contiguous = {(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2), (3, 4), (4, 3)}
    assert _pairs(neighbour_targets(5)) == contiguous
    # sentences 0-2 from one document, 3-4 from another: no pair across the boundary
    two_docs = {(0, 1), (1, 0), (1, 2), (2, 1), (3, 4), (4, 3)}
    assert _pairs(neighbour_targets(5, doc_ids=torch.tensor([0, 0, 0, 1, 1]))) == two_docs
    positions, docs = torch.tensor([3, 4, 5, 0, 1]), torch.tensor([7, 7, 7, 2, 2])
    assert _pairs(neighbour_targets(5, positions=positions, doc_ids=docs)) == two_docs
    # shuffled positions in one document: neighbours follow positions, not batch order
    shuffled = {(0, 2), (2, 0), (0, 4), (4, 0), (1, 2), (2, 1), (3, 4), (4, 3)}
    assert _pairs(neighbour_targets(5, positions=torch.tensor([2, 0, 1, 4, 3]))) == shuffled
    # context size 2 adds the sentences two steps away
    wide = contiguous | {(0, 2), (2, 0), (1, 3), (3, 1), (2, 4), (4, 2)}
    assert _pairs(neighbour_targets(5, context_size=2)) == wide


def _qt_loop(
    u: np.ndarray, v: np.ndarray, neighbours: dict[int, list[int]], reduction: str, zero_diag: bool
) -> float:
    scores = u @ v.T
    batch = len(u)
    pair_losses, row_losses = [], []
    for i in range(batch):
        if not neighbours[i]:
            continue
        denominator = sum(math.exp(scores[i, k]) for k in range(batch) if k != i)
        if zero_diag:
            denominator += 1.0  # exp(0) for the source sentence
        terms = [-math.log(math.exp(scores[i, j]) / denominator) for j in neighbours[i]]
        pair_losses.extend(terms)
        row_losses.append(np.mean(terms))
    return float(np.mean(pair_losses if reduction == "pairs" else row_losses))


def test_quick_thoughts_loss_against_loop_contiguous() -> None:
    z = _views(5, 2, 4, seed=5)
    neighbours = {0: [1], 1: [0, 2], 2: [1, 3], 3: [2, 4], 4: [3]}
    u, v = z[:, 0].numpy(), z[:, 1].numpy()
    got = QuickThoughts()(z)["loss"].item()
    assert got == pytest.approx(_qt_loop(u, v, neighbours, "pairs", False), rel=1e-10)
    rows = QuickThoughts(reduction="rows")(z)["loss"].item()
    assert rows == pytest.approx(_qt_loop(u, v, neighbours, "rows", False), rel=1e-10)
    zero = QuickThoughts(reduction="rows", diagonal="zero")(z)["loss"].item()
    assert zero == pytest.approx(_qt_loop(u, v, neighbours, "rows", True), rel=1e-10)
    assert got != pytest.approx(rows, rel=1e-6)


def test_quick_thoughts_loss_respects_documents() -> None:
    z = _views(5, 2, 4, seed=6)
    neighbours = {0: [1], 1: [0, 2], 2: [1], 3: [4], 4: [3]}
    got = QuickThoughts()(z, doc_ids=torch.tensor([0, 0, 0, 1, 1]))["loss"].item()
    assert got == pytest.approx(
        _qt_loop(z[:, 0].numpy(), z[:, 1].numpy(), neighbours, "pairs", False), rel=1e-10
    )


def test_quick_thoughts_diagonal_is_masked() -> None:
    z = _views(5, 2, 4, seed=7)
    u, v = z[:, 0], z[:, 1]
    targets = neighbour_targets(5)
    base = quick_thoughts_loss(u, v, targets)
    # appending c*I to u and I to v adds c to S_ii only
    eye = torch.eye(5, dtype=torch.float64)
    u_shift, v_shift = torch.cat([u, 9.0 * eye], dim=1), torch.cat([v, eye], dim=1)  # (5, 4 + 5) each
    shifted = quick_thoughts_loss(u_shift, v_shift, targets)
    assert shifted.item() == pytest.approx(base.item(), rel=1e-12)
    # the unmasked softmax would see the change: a loop with S_ii included differs
    scores = (u @ v.T).numpy() + 9.0 * np.eye(5)
    unmasked = np.mean(
        [-(scores[i, j] - np.log(np.exp(scores[i]).sum())) for i, j in sorted(_pairs(targets))]
    )
    assert shifted.item() != pytest.approx(float(unmasked), rel=1e-3)


def _quick_thoughts_by_hand(z: torch.Tensor) -> torch.Tensor:
    """The paper's loss written out: mean over neighbour pairs (i, i±1) of -log softmax_{k != i}(u_i . v_k)[j]."""
    u, v = z[:, 0], z[:, 1]
    terms = []
    for i in range(len(z)):
        candidates = torch.stack([u[i] @ v[k] for k in range(len(z)) if k != i])
        for j in (i - 1, i + 1):
            if 0 <= j < len(z):
                terms.append(torch.logsumexp(candidates, dim=0) - u[i] @ v[j])
    return torch.stack(terms).mean()


def test_quick_thoughts_gradient_matches_hand_written_loss_and_finite_differences() -> None:
    z = _views(6, 2, 4, seed=8).requires_grad_(True)
    QuickThoughts()(z)["loss"].backward()
    got = z.grad.clone()
    reference = z.detach().clone().requires_grad_(True)
    _quick_thoughts_by_hand(reference).backward()
    torch.testing.assert_close(got, reference.grad, rtol=0, atol=1e-12)
    h = 1e-6  # central differences in float64, on a few coordinates
    for index in [(0, 0, 0), (2, 1, 3), (5, 0, 2), (3, 1, 1)]:
        plus, minus = z.detach().clone(), z.detach().clone()
        plus[index] += h
        minus[index] -= h
        numeric = (QuickThoughts()(plus)["loss"] - QuickThoughts()(minus)["loss"]).item() / (2 * h)
        assert got[index].item() == pytest.approx(numeric, abs=1e-7)


def test_quick_thoughts_rejects_bad_meta() -> None:
    z = _views(4, 2, 3, seed=9)
    objective = QuickThoughts()
    with pytest.raises(ValueError, match=r"'positions' must be shaped \(4,\)"):
        objective(z, positions=torch.arange(3))
    with pytest.raises(ValueError, match="integers"):
        objective(z, positions=torch.arange(4.0))
    with pytest.raises(ValueError, match="same"):
        objective(z, positions=torch.tensor([0, 1, 1, 2]))
    with pytest.raises(ValueError, match="no \\(sentence, neighbour\\) pair"):
        objective(z, doc_ids=torch.arange(4))
    with pytest.raises(ValueError, match="unknown meta"):
        objective(z, position=torch.arange(4))


def test_quick_thoughts_embedding_concatenates_f_then_g() -> None:
    f = np.arange(6.0).reshape(2, 3)  # (2, 3)
    g = -np.arange(4.0).reshape(2, 2)  # (2, 2)
    got = quick_thoughts_embedding(torch.tensor(f), torch.tensor(g)).numpy()
    np.testing.assert_array_equal(got, np.hstack([f, g]))
    with pytest.raises(ValueError, match="leading shape"):
        quick_thoughts_embedding(torch.zeros(2, 3), torch.zeros(3, 3))


# ------------------------------------------------------------------ cutoff + triplet


def test_cutoff_triplet_against_loop() -> None:
    z = _views(6, 3, 5, seed=10)
    h = z.numpy()
    tau, margin, weight = 0.07, 0.3, 0.5
    infonce = _infonce_loop(h[:, 0], h[:, 1], tau)
    triplet = np.mean([max(0.0, margin + _cos(h[i, 0], h[i, 2]) - _cos(h[i, 0], h[i, 1])) for i in range(6)])
    out = CutoffTriplet(temperature=tau, margin=margin, triplet_weight=weight, form="weak_positive")(z)
    assert out["infonce"].item() == pytest.approx(infonce, rel=1e-10)
    assert out["triplet"].item() == pytest.approx(triplet, rel=1e-10)
    assert out["loss"].item() == pytest.approx(infonce + weight * triplet, rel=1e-10)


def test_cutoff_triplet_keeps_anchor_closer_to_weak_view() -> None:
    anchor = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    orthogonal = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    objective = CutoffTriplet(margin=0.2, form="weak_positive")
    # weak view = anchor (cos 1), strong view orthogonal (cos 0): max(0, 0.2 + 0 - 1) = 0
    good = objective(torch.stack([anchor, anchor, orthogonal], dim=1))["triplet"].item()  # z (2, 3, 2)
    assert good == pytest.approx(0.0, abs=1e-7)
    # swapped: max(0, 0.2 + 1 - 0) = 1.2
    bad = objective(torch.stack([anchor, orthogonal, anchor], dim=1))["triplet"].item()  # z (2, 3, 2)
    assert bad == pytest.approx(1.2, rel=1e-6)


def test_cutoff_triplet_defaults() -> None:
    objective = CutoffTriplet()
    assert (objective.temperature, objective.margin, objective.triplet_weight) == (0.07, 0.0, 1.0)
    assert (objective.form, objective.num_views) == (
        "paper",
        4,
    )  # Han, Jeong and Chae's views (s, s', s*, s**)
    with pytest.raises(ValueError, match=r"\(batch, 4, dim\)"):
        objective(_views(3, 2, 4, seed=11))


# ------------------------------------------------------------------ MLM


MASK_ID, VOCAB = 3, 30000


def _mlm_input(seed: int, rows: int = 200, length: int = 500) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(10, VOCAB, (rows, length), generator=gen)  # never MASK_ID
    special = torch.rand(rows, length, generator=gen) < 0.2
    return ids, special


def test_mask_tokens_follows_80_10_10() -> None:
    ids, special = _mlm_input(0)
    masked, labels = mask_tokens(ids, special, MASK_ID, VOCAB, generator=torch.Generator().manual_seed(1))
    selected = labels != -100
    eligible = int((~special).sum())
    n = int(selected.sum())
    assert abs(n - 0.15 * eligible) < 5 * math.sqrt(eligible * 0.15 * 0.85)
    assert not (selected & special).any()
    assert torch.equal(labels[selected], ids[selected])
    assert torch.equal(masked[~selected], ids[~selected])
    to_mask = int((masked[selected] == MASK_ID).sum())
    unchanged = int((masked[selected] == ids[selected]).sum())
    randomised = n - to_mask - unchanged
    for count, share in ((to_mask, 0.8), (randomised, 0.1), (unchanged, 0.1)):
        assert abs(count - share * n) < 5 * math.sqrt(n * share * (1 - share))


def test_mask_tokens_is_deterministic_under_generator() -> None:
    ids, special = _mlm_input(2, rows=20, length=50)
    first = mask_tokens(ids, special, MASK_ID, VOCAB, generator=torch.Generator().manual_seed(5))
    second = mask_tokens(ids, special, MASK_ID, VOCAB, generator=torch.Generator().manual_seed(5))
    other = mask_tokens(ids, special, MASK_ID, VOCAB, generator=torch.Generator().manual_seed(6))
    assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])
    assert not torch.equal(first[1], other[1])


def test_mask_tokens_rejects_bad_input() -> None:
    ids, special = _mlm_input(3, rows=2, length=4)
    with pytest.raises(ValueError, match="special_mask shape"):
        mask_tokens(ids, special[:, :3], MASK_ID, VOCAB)
    with pytest.raises(ValueError, match="probability"):
        mask_tokens(ids, special, MASK_ID, VOCAB, probability=0.0)
    with pytest.raises(ValueError, match="mask_token_id"):
        mask_tokens(ids, special, VOCAB, VOCAB)


def test_mlm_loss_against_loop() -> None:
    gen = torch.Generator().manual_seed(4)
    logits = torch.randn(2, 5, 7, generator=gen, dtype=torch.float64)
    labels = torch.tensor([[-100, 3, -100, 0, 6], [2, -100, -100, -100, 1]])
    x = logits.numpy()
    terms = []
    for n in range(2):
        for t in range(5):
            if labels[n, t] != -100:
                row = x[n, t]
                terms.append(-(row[labels[n, t]] - math.log(np.exp(row).sum())))
    assert mlm_loss(logits, labels).item() == pytest.approx(float(np.mean(terms)), rel=1e-10)


def test_mlm_loss_without_selected_positions_is_zero() -> None:
    logits = torch.randn(1, 3, 4, requires_grad=True)
    loss = mlm_loss(logits, torch.full((1, 3), -100))
    loss.backward()
    assert loss.item() == 0.0
    assert torch.equal(logits.grad, torch.zeros(1, 3, 4))


def test_add_mlm_weights_by_a_tenth() -> None:
    out = add_mlm({"loss": torch.tensor(2.0)}, torch.tensor(3.0))
    assert out["loss"].item() == pytest.approx(2.3)
    assert out["mlm"].item() == pytest.approx(3.0)
