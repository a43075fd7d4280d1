"""Poolers of the SimCSE paper: hidden states -> one vector per sentence.

``cls``/``cls_before_pooler`` take the [CLS] row of the last layer (the MLP head
on top of ``cls`` lives in heads.py); ``avg`` averages the last layer over real
tokens; ``avg_top2`` the last two layers; ``avg_first_last`` the first
transformer layer (``hidden_states[1]``, as in the SimCSE code after its fix)
and the last.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from sentcl.registry import Registry

Pooler = Callable[[Sequence[Tensor], Tensor], Tensor]
POOLERS: Registry[Tensor] = Registry("pooler")

# Poolers that read more than the last layer need output_hidden_states=True.
NEEDS_ALL_LAYERS = frozenset({"avg_top2", "avg_first_last"})


def masked_mean(hidden: Tensor, attention_mask: Tensor) -> Tensor:
    """Mean over tokens whose mask is 1: (N, L, H), (N, L) -> (N, H)."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)  # (N, L, 1)
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)


@POOLERS.register("cls")
@POOLERS.register("cls_before_pooler")
def pool_cls(hidden_states: Sequence[Tensor], attention_mask: Tensor) -> Tensor:
    return hidden_states[-1][:, 0]  # (N, H)


@POOLERS.register("avg")
def pool_avg(hidden_states: Sequence[Tensor], attention_mask: Tensor) -> Tensor:
    return masked_mean(hidden_states[-1], attention_mask)


@POOLERS.register("avg_top2")
def pool_avg_top2(hidden_states: Sequence[Tensor], attention_mask: Tensor) -> Tensor:
    return masked_mean((hidden_states[-2] + hidden_states[-1]) / 2.0, attention_mask)


@POOLERS.register("avg_first_last")
def pool_avg_first_last(hidden_states: Sequence[Tensor], attention_mask: Tensor) -> Tensor:
    return masked_mean((hidden_states[1] + hidden_states[-1]) / 2.0, attention_mask)


def pool(name: str, hidden_states: Sequence[Tensor], attention_mask: Tensor) -> Tensor:
    return POOLERS.get(name)(hidden_states, attention_mask)


def cosine_matrix(a: Tensor, b: Tensor) -> Tensor:
    """cos(a_i, b_j) for all pairs: (N, D), (M, D) -> (N, M)."""
    a = torch.nn.functional.normalize(a, dim=-1)
    b = torch.nn.functional.normalize(b, dim=-1)
    return a @ b.T
