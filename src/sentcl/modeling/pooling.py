"""Poolers of the SimCSE paper: hidden states -> one vector per sentence. The one list of poolers.

``cls``/``cls_before_pooler`` take the [CLS] row of the last layer (``cls`` adds the MLP head of heads.py
on top); ``avg`` averages the last layer over real tokens; ``avg_top2`` the last two layers;
``avg_first_last`` the first transformer layer (``hidden_states[1]``, as in the SimCSE code after its fix)
and the last; ``mask`` is PromptBERT's [MASK] state of a template (modeling/prompt.py).

What a pooler is (its head, its layers, its prompt, its sentence-transformers equivalent, packed support) is
declared once, in the torch-free table ``sentcl.config.poolers.POOLER_TABLE``; this module adds each name's function
(``POOLER_FUNCTIONS``, which must cover the table exactly) and ``POOLER_SPECS``, the function beside the
table's facts for the encoder. ``POOLERS`` and ``HEADLESS_POOLERS`` are the table's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from torch import Tensor

from sentcl.config.poolers import HEADLESS_POOLERS, POOLER_TABLE, POOLERS

Pooler = Callable[[Sequence[Tensor], Tensor], Tensor]


@dataclass(frozen=True)
class PoolerSpec:
    """One pooler: its function, whether it adds SimCSE's MLP head, whether it reads more than the last
    layer (the encoder then asks for ``output_hidden_states=True``)."""

    fn: Pooler
    head: bool = False
    all_layers: bool = False
    #: reads the [MASK] row of a prompt template (modeling/prompt.py): the model must hold a template
    prompt: bool = False


def masked_mean(hidden: Tensor, attention_mask: Tensor) -> Tensor:
    """Mean over tokens whose mask is 1: (N, L, H), (N, L) -> (N, H)."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)  # (N, L, 1)
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)


def pool_cls(hidden_states: Sequence[Tensor], attention_mask: Tensor) -> Tensor:
    return hidden_states[-1][:, 0]  # (N, H)


def pool_avg(hidden_states: Sequence[Tensor], attention_mask: Tensor) -> Tensor:
    return masked_mean(hidden_states[-1], attention_mask)


def pool_avg_top2(hidden_states: Sequence[Tensor], attention_mask: Tensor) -> Tensor:
    return masked_mean((hidden_states[-2] + hidden_states[-1]) / 2.0, attention_mask)


def pool_avg_first_last(hidden_states: Sequence[Tensor], attention_mask: Tensor) -> Tensor:
    return masked_mean((hidden_states[1] + hidden_states[-1]) / 2.0, attention_mask)


def pool_mask(hidden_states: Sequence[Tensor], attention_mask: Tensor) -> Tensor:
    """PromptBERT's [MASK] state: the encoder computes it with its template (modeling/prompt.py)."""
    raise ValueError("pooler 'mask' needs the input ids and a prompt template: use SentenceEncoder")


#: each pooler's function, by the name of its row in sentcl.config.poolers.POOLER_TABLE
POOLER_FUNCTIONS: dict[str, Pooler] = {
    "cls": pool_cls,
    "cls_before_pooler": pool_cls,
    "avg": pool_avg,
    "avg_top2": pool_avg_top2,
    "avg_first_last": pool_avg_first_last,
    "mask": pool_mask,
}
if set(POOLER_FUNCTIONS) != set(POOLER_TABLE):  # a new row of the table needs its function here, and back
    raise ImportError(
        f"pooler functions {sorted(POOLER_FUNCTIONS)} do not match the table {sorted(POOLER_TABLE)}"
    )

POOLER_SPECS: dict[str, PoolerSpec] = {
    name: PoolerSpec(POOLER_FUNCTIONS[name], head=info.head, all_layers=info.all_layers, prompt=info.prompt)
    for name, info in POOLER_TABLE.items()
}
# Poolers that read more than the last layer need output_hidden_states=True.
NEEDS_ALL_LAYERS = frozenset(name for name, info in POOLER_TABLE.items() if info.all_layers)
__all__ = ["HEADLESS_POOLERS", "NEEDS_ALL_LAYERS", "POOLERS", "POOLER_SPECS", "pool", "pooler_spec"]


def pooler_spec(name: str) -> PoolerSpec:
    """The pooler called ``name``; an unknown name is a KeyError that lists the valid ones."""
    if name not in POOLER_SPECS:
        raise KeyError(f"unknown pooler {name!r}; valid: {', '.join(POOLERS)}")
    return POOLER_SPECS[name]


def pool(name: str, hidden_states: Sequence[Tensor], attention_mask: Tensor) -> Tensor:
    return pooler_spec(name).fn(hidden_states, attention_mask)
