"""ArcCSE's triplet views: two masked copies of a sentence where the second's span contains the first's.

For a sentence with n real tokens (see :mod:`sentcl.data.augment.tokens`), the less-masked view x' replaces a
uniformly placed span of c' = round_half_up(rate' * n) (at least 1) real tokens by [MASK]; the more-masked
view x'' replaces a span of c'' = max(round_half_up(rate'' * n), c' + 1) tokens (at most n) that contains
x''s span, its start uniform among the placements that do. So x entails x' entails x'': the more-masked view
keeps a subset of what the less-masked one keeps. Attention stays on the masked positions (BERT's [MASK]).

Use: ``pair = NestedSpanMask(0.1, 0.2, tokenizer, generator=seed)``; ``pair.weak`` and ``pair.strong`` are the
per-view token augmentations, called in that order on the same rows (the step applies views in order).
"""

from __future__ import annotations

import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase

from sentcl.data.augment.tokens import (
    SpecialIds,
    TokenView,
    apply_selection,
    as_generator,
    as_special_ids,
    change_counts,
    check_batch,
    check_rate,
    real_token_mask,
    select_span,
)


def span_bounds(selected: Tensor, real: Tensor) -> tuple[Tensor, Tensor]:
    """(start, count) of each row's selected span, counted in real tokens: (N, L) bool -> (N,), (N,)."""
    rank = real.long().cumsum(dim=1) - 1  # (N, L): index among the row's real tokens
    counts = selected.sum(dim=1)  # (N,)
    big = torch.full_like(rank, torch.iinfo(torch.long).max)
    start = torch.where(selected, rank, big).min(dim=1).values  # (N,)
    return torch.where(counts > 0, start, torch.zeros_like(start)), counts


class NestedSpanMask:
    """Two [MASK] views of the same rows, the strong view's span containing the weak view's span."""

    def __init__(
        self,
        weak_rate: float,
        strong_rate: float,
        tokenizer: PreTrainedTokenizerBase | SpecialIds,
        replace_with: str = "mask",
        generator: torch.Generator | int | None = None,
    ) -> None:
        if check_rate(weak_rate, "weak_rate") >= check_rate(strong_rate, "strong_rate"):
            raise ValueError(f"strong_rate must exceed weak_rate, got {strong_rate} <= {weak_rate}")
        self.weak_rate, self.strong_rate = weak_rate, strong_rate
        self.special = as_special_ids(tokenizer)
        self.replace_with = replace_with
        self.special.replacement(replace_with)  # fail now if the tokenizer lacks the token
        self.generator = as_generator(generator)
        self._last: tuple[Tensor, Tensor, Tensor] | None = None  # (input_ids, start, count) of the weak view

    def weak(self, input_ids: Tensor, attention_mask: Tensor) -> TokenView:
        check_batch(input_ids, attention_mask)
        real = real_token_mask(input_ids, attention_mask, self.special)  # (N, L)
        selected = select_span(real, change_counts(self.weak_rate, real.sum(dim=1)), self.generator)
        start, count = span_bounds(selected, real)
        self._last = (input_ids.clone(), start, count)
        return apply_selection(input_ids, attention_mask, selected, self.replace_with, self.special, False)

    def strong(self, input_ids: Tensor, attention_mask: Tensor) -> TokenView:
        check_batch(input_ids, attention_mask)
        if self._last is None or not torch.equal(self._last[0], input_ids):
            raise RuntimeError("NestedSpanMask.strong must follow .weak on the same rows")
        _, start1, count1 = self._last
        self._last = None
        real = real_token_mask(input_ids, attention_mask, self.special)  # (N, L)
        n = real.sum(dim=1)  # (N,)
        count2 = torch.minimum(torch.maximum(change_counts(self.strong_rate, n), count1 + 1), n)  # (N,)
        low = torch.clamp(start1 + count1 - count2, min=0)  # (N,)
        high = torch.minimum(start1, n - count2)  # (N,)
        u = torch.rand(n.shape, generator=self.generator, dtype=torch.float64).to(n.device)  # (N,)
        start2 = torch.minimum(low + torch.floor(u * (high - low + 1).double()).long(), high)  # (N,)
        rank = real.long().cumsum(dim=1) - 1  # (N, L)
        selected = real & (rank >= start2[:, None]) & (rank < (start2 + count2)[:, None])  # (N, L)
        return apply_selection(input_ids, attention_mask, selected, self.replace_with, self.special, False)
