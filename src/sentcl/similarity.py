"""Unit rows and cosine similarity: the one row L2 normalisation of sentcl (``unit_rows``, numpy or torch) and the
one cosine formula behind an encoder's ``similarity`` and the contrastive objectives' logits (InfoNCE, ESimCSE,
MixCSE, ArcCSE). Torch is imported only where a tensor is asked for, so numpy callers (indexes, the service's
answers, evaluations) import this module without it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

import numpy as np

if TYPE_CHECKING:
    from torch import Tensor

    from sentcl.types import Encoder

#: The smallest norm divided by (torch.nn.functional.normalize's eps): a zero row stays zero.
NORM_EPS = 1e-12

RowsT = TypeVar("RowsT", np.ndarray, "Tensor")


def unit_rows(x: RowsT) -> RowsT:
    """Each row (the last axis) divided by its L2 norm, x / max(‖x‖, 1e-12), so a zero row stays zero: any
    leading shape, (..., D) -> (..., D). A torch tensor stays a tensor (autograd flows); a numpy array gives a
    new array of its floating dtype (an integer array gives float64)."""
    if isinstance(x, np.ndarray):
        rows = x if np.issubdtype(x.dtype, np.floating) else x.astype(np.float64)
        norms = np.linalg.norm(rows, axis=-1, keepdims=True)  # (..., 1)
        return rows / np.maximum(norms, NORM_EPS).astype(rows.dtype)
    import torch

    return torch.nn.functional.normalize(x, p=2.0, dim=-1, eps=NORM_EPS)


def wants_unit_rows(normalize: bool, normalize_embeddings: bool | None) -> bool:
    """``encode``'s normalisation from its ``normalize`` or sentence-transformers' ``normalize_embeddings``
    (either name; both given must agree)."""
    if normalize_embeddings is None:
        return bool(normalize)
    if normalize and not normalize_embeddings:
        raise ValueError("normalize=True and normalize_embeddings=False disagree: give one of them")
    return bool(normalize_embeddings)


def cosine_matrix(a: Tensor, b: Tensor) -> Tensor:
    """cos(a_i, b_j) for all pairs: (N, D), (M, D) -> (N, M)."""
    return unit_rows(a) @ unit_rows(b).T


def embedding_matrix(encoder: Encoder, x: str | Sequence[str] | np.ndarray | Tensor) -> Tensor:
    """Sentences (encoded with ``encoder.encode``) or ready embeddings -> a float tensor (N, D)."""
    import torch

    if isinstance(x, str):
        x = [x]
    if isinstance(x, np.ndarray | torch.Tensor):
        t = torch.as_tensor(x, dtype=torch.float32)
    else:
        t = encoder.encode(list(x), convert_to_numpy=False)
    return t.unsqueeze(0) if t.dim() == 1 else t
