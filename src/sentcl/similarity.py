"""Cosine similarity of two sets of embeddings: the one formula behind an encoder's ``similarity`` and the
contrastive objectives' logits (InfoNCE, ESimCSE, MixCSE, ArcCSE)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor

if TYPE_CHECKING:
    from sentcl.types import Encoder


def cosine_matrix(a: Tensor, b: Tensor) -> Tensor:
    """cos(a_i, b_j) for all pairs: (N, D), (M, D) -> (N, M)."""
    a = torch.nn.functional.normalize(a, dim=-1)
    b = torch.nn.functional.normalize(b, dim=-1)
    return a @ b.T


def embedding_matrix(encoder: Encoder, x: str | Sequence[str] | np.ndarray | Tensor) -> Tensor:
    """Sentences (encoded with ``encoder.encode``) or ready embeddings -> a float tensor (N, D)."""
    if isinstance(x, str):
        x = [x]
    if isinstance(x, np.ndarray | Tensor):
        t = torch.as_tensor(x, dtype=torch.float32)
    else:
        t = encoder.encode(list(x), convert_to_numpy=False)
    return t.unsqueeze(0) if t.dim() == 1 else t
