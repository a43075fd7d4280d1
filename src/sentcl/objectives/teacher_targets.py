"""What the distillation objectives get from their teachers, and the two targets built from it.

The method's teachers (``sentcl.methods.teachers``) send each teacher's cached vectors of the batch as keyword
tensors ``teacher_0 .. teacher_{K-1}``, (B, D_k) each, row i belonging to example i of the (B, V, D) views.
From them:

- ``teacher_mean``: t_i = sum_k w_k t_i^(k), (B, D) (distill_mse's target; one width for every teacher);
- ``teacher_sims``: S^(k)_ij = cos(t_i^(k), t_j^(k)) for each teacher, (K, B, B), and ``teacher_logits``:
  sum_k w_k S^(k) / tau_T, (B, B) (the weighted average of the teachers' scaled similarity matrices, as RankCSE
  combines its SimCSE and DiffCSE teachers; distill_kl's and rankcse's target).

The weights w_k are the recipe's ``model.teacher`` weights normalised to sum to 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor

from sentcl.similarity import cosine_matrix


def teacher_key(k: int) -> str:
    """The keyword of teacher k's vectors."""
    return f"teacher_{k}"


def teacher_vectors(meta: Mapping[str, Tensor], count: int) -> list[Tensor]:
    """The K teachers' (B, D_k) vectors from the objective's keywords; a clear error when one is missing."""
    missing = [teacher_key(k) for k in range(count) if teacher_key(k) not in meta]
    if missing:
        raise ValueError(
            f"the objective needs the teachers' vectors {', '.join(missing)} in the batch metadata"
        )
    return [meta[teacher_key(k)] for k in range(count)]


def teacher_mean(meta: Mapping[str, Tensor], weights: Sequence[float]) -> Tensor:
    """t = sum_k w_k t^(k): (B, D)."""
    parts = teacher_vectors(meta, len(weights))
    return torch.stack([w * t for w, t in zip(weights, parts, strict=True)]).sum(dim=0)  # (K, B, D) -> (B, D)


def teacher_sims(meta: Mapping[str, Tensor], count: int) -> Tensor:
    """S^(k)_ij = cos(t_i^(k), t_j^(k)) for each teacher: (K, B, B)."""
    return torch.stack([cosine_matrix(t, t) for t in teacher_vectors(meta, count)])  # (K, B, B)


def teacher_logits(meta: Mapping[str, Tensor], weights: Sequence[float], temperature: float) -> Tensor:
    """sum_k w_k S^(k) / tau_T: (B, B)."""
    sims = teacher_sims(meta, len(weights))  # (K, B, B)
    w = torch.tensor(list(weights), dtype=sims.dtype, device=sims.device)  # (K,)
    return torch.einsum("k,kij->ij", w, sims) / temperature  # (B, B)


def off_diagonal(logits: Tensor) -> Tensor:
    """The (B, B) logits with the diagonal at -inf: softmax over j != i."""
    eye = torch.eye(logits.size(0), dtype=torch.bool, device=logits.device)  # (B, B)
    return logits.masked_fill(eye, float("-inf"))
