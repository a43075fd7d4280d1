"""Quick-Thoughts (Logeswaran & Lee, ICLR 2018): pick a sentence's neighbours out of the batch.

    p(s_j | s_i) = exp(u_i . v_j) / sum_{k != i} exp(u_i . v_k),   u = f(s) ("input"), v = g(s) ("context")
    loss = -mean over target pairs (i, j) of log p(s_j | s_i),   targets: 1 <= |pos_j - pos_i| <= c, same document

The batch is B consecutive sentences of ordered text. Scores are inner products S = U V^T (B x B);
the source sentence is not a candidate (S_ii = -inf); the other B - 1 sentences are.

The paper's objective is sum_s sum_{s_ctxt in S_ctxt(s)} log p(s_ctxt | s, S_cand): every
(sentence, neighbour) pair is its own cross-entropy term over the same softmax. That is the default
here (``reduction="pairs"``, normalised to a mean over pairs). The authors' TensorFlow code differs in
two details, available as options: it spreads a unit of target mass evenly over a row's neighbours
and averages rows (``reduction="rows"``), and it "ignores" the source sentence by setting S_ii = 0,
which leaves exp(0) in the denominator (``diagonal="zero"``; the default ``"mask"`` uses -inf).

The KL form (``reduction="kl"``, ours to offer, not the paper's) writes it as score f·gᵀ, diagonal set to 0, softmax, and the KL divergence from each row's
targets t_i (uniform over the row's neighbours, summing to 1) to the softmax p_i:
KL(t_i || p_i) = sum_j t_ij (log t_ij - log p_ij), averaged over the rows that have a neighbour
(``reduction="kl"`` with ``diagonal="zero"``). It differs from ``"rows"`` by the targets' entropy, a
constant, so the gradients agree.

The inference embedding [f(s); g(s)] is model-side; ``quick_thoughts_embedding`` is the one-line helper.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from sentcl.methods.quick_thoughts.options import QT_DIAGONALS, QT_REDUCTIONS
from sentcl.objectives.base import Objective

REDUCTIONS, DIAGONALS = QT_REDUCTIONS, QT_DIAGONALS


def quick_thoughts_embedding(f_emb: Tensor, g_emb: Tensor) -> Tensor:
    """The paper's sentence representation [f(s); g(s)]: (..., D_f), (..., D_g) -> (..., D_f + D_g)."""
    if f_emb.shape[:-1] != g_emb.shape[:-1]:
        raise ValueError(
            f"f and g embeddings disagree on leading shape: {tuple(f_emb.shape)} vs {tuple(g_emb.shape)}"
        )
    return torch.cat([f_emb, g_emb], dim=-1)  # (..., D_f + D_g)


def _check_meta(name: str, value: Tensor | None, batch: int, device: torch.device) -> Tensor | None:
    if value is None:
        return None
    value = torch.as_tensor(value, device=device)
    if value.shape != (batch,):
        raise ValueError(f"Quick-Thoughts meta {name!r} must be shaped ({batch},), got {tuple(value.shape)}")
    if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
        raise ValueError(f"Quick-Thoughts meta {name!r} must hold integers, got dtype {value.dtype}")
    return value


def neighbour_targets(
    batch: int,
    positions: Tensor | None = None,
    doc_ids: Tensor | None = None,
    context_size: int = 1,
    device: torch.device | None = None,
) -> Tensor:
    """Boolean (B, B) matrix: [i, j] is True when sentence j is a context target of sentence i.

    j is a target of i when 1 <= |positions[j] - positions[i]| <= context_size and doc_ids agree.
    positions default to arange(B) (a contiguous batch), doc_ids to one document.
    """
    if context_size < 1:
        raise ValueError(f"context_size must be at least 1, got {context_size}")
    device = device if device is not None else torch.device("cpu")
    pos = _check_meta("positions", positions, batch, device)
    docs = _check_meta("doc_ids", doc_ids, batch, device)
    pos = pos if pos is not None else torch.arange(batch, device=device)  # (B,)
    docs = docs if docs is not None else torch.zeros(batch, dtype=torch.long, device=device)  # (B,)
    keys = torch.stack([docs.long(), pos.long()], dim=1)  # (B, 2): (document, position)
    if torch.unique(keys, dim=0).size(0) != batch:
        raise ValueError("Quick-Thoughts batch has two sentences with the same (doc_id, position)")
    distance = (pos[None, :] - pos[:, None]).abs()  # (B, B): |pos_j - pos_i|
    same_doc = docs[None, :] == docs[:, None]  # (B, B)
    return same_doc & (distance >= 1) & (distance <= context_size)


def quick_thoughts_loss(
    inputs: Tensor, contexts: Tensor, targets: Tensor, reduction: str = "pairs", diagonal: str = "mask"
) -> Tensor:
    """Cross-entropy of S = inputs @ contexts^T (B, B) against the boolean (B, B) ``targets``."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"unknown reduction {reduction!r}; valid: {', '.join(REDUCTIONS)}")
    if diagonal not in DIAGONALS:
        raise ValueError(f"unknown diagonal {diagonal!r}; valid: {', '.join(DIAGONALS)}")
    batch = inputs.size(0)
    if targets.shape != (batch, batch) or targets.dtype != torch.bool:
        raise ValueError(
            f"targets must be a boolean ({batch}, {batch}) matrix, got {targets.dtype} {tuple(targets.shape)}"
        )
    if targets.diagonal().any():
        raise ValueError("a sentence cannot be its own Quick-Thoughts target")
    if not targets.any():
        raise ValueError("Quick-Thoughts batch has no (sentence, neighbour) pair: check positions / doc_ids")
    scores = inputs @ contexts.T  # (B, B): u_i . v_j
    eye = torch.eye(batch, dtype=torch.bool, device=scores.device)  # (B, B)
    scores = scores.masked_fill(eye, float("-inf") if diagonal == "mask" else 0.0)
    log_probs = torch.log_softmax(scores, dim=1)  # (B, B)
    target_log_probs = log_probs.masked_fill(~targets, 0.0)  # (B, B), zero off target (also clears -inf)
    if reduction == "pairs":
        return -target_log_probs.sum() / targets.sum()
    per_row = targets.sum(dim=1)  # (B,)
    has_target = per_row > 0  # (B,)
    row_loss = -target_log_probs.sum(dim=1)[has_target] / per_row[has_target]  # (rows with targets,)
    if reduction == "kl":  # KL(t_i || p_i) = cross-entropy - entropy of t_i, t_ij = 1 / |targets of i|
        row_loss = row_loss + torch.log(1.0 / per_row[has_target].to(row_loss.dtype))  # (rows with targets,)
    return row_loss.mean()


class QuickThoughts(Objective):
    """z (B, 2, D): view 0 = f(s_i) (input encoder), view 1 = g(s_i) (context encoder), same sentence.

    Optional meta: ``positions`` (B,) and ``doc_ids`` (B,) integer tensors; neighbours in another
    document are not targets (they stay in the softmax as negatives).
    """

    num_views = 2

    def __init__(self, context_size: int = 1, reduction: str = "pairs", diagonal: str = "mask") -> None:
        super().__init__()  # checked once, by the options class (QuickThoughtsOptions)
        self.context_size = context_size
        self.reduction = reduction
        self.diagonal = diagonal

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        self.check_views(z)
        if z.size(0) < 2:
            raise ValueError(f"Quick-Thoughts needs at least 2 sentences per batch, got {z.size(0)}")
        unknown = set(meta) - {"positions", "doc_ids"}
        if unknown:
            raise ValueError(f"Quick-Thoughts got unknown meta {sorted(unknown)}; valid: positions, doc_ids")
        targets = neighbour_targets(
            z.size(0), meta.get("positions"), meta.get("doc_ids"), self.context_size, device=z.device
        )
        inputs, contexts = z[:, 0], z[:, 1]  # (B, D) each: u_i = f(s_i), v_i = g(s_i)
        return {"loss": quick_thoughts_loss(inputs, contexts, targets, self.reduction, self.diagonal)}
