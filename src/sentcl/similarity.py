"""Cosine similarity of two sets of embeddings: the one formula behind an encoder's ``similarity`` and the
contrastive objectives' logits (InfoNCE, ESimCSE, MixCSE, ArcCSE)."""

from __future__ import annotations

import torch
from torch import Tensor


def cosine_matrix(a: Tensor, b: Tensor) -> Tensor:
    """cos(a_i, b_j) for all pairs: (N, D), (M, D) -> (N, M)."""
    a = torch.nn.functional.normalize(a, dim=-1)
    b = torch.nn.functional.normalize(b, dim=-1)
    return a @ b.T
