"""Views -> one flat tokenized batch: B examples with V views become B·V rows, example-major."""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor
from transformers import PreTrainedTokenizerBase

from sentcl.files.budget import bounded_texts


def flatten_views(views: Sequence[Sequence[str]]) -> list[str]:
    """[(s0v0, s0v1), (s1v0, s1v1)] -> [s0v0, s0v1, s1v0, s1v1]; every example must have the same V."""
    num_views = {len(v) for v in views}
    if len(num_views) != 1:
        raise ValueError(f"examples have different numbers of views: {sorted(num_views)}")
    return [text for example in views for text in example]


def collate(
    views: Sequence[Sequence[str]], tokenizer: PreTrainedTokenizerBase, max_length: int
) -> dict[str, Tensor]:
    """Tokenize B×V texts, padded to the longest row of the batch: input_ids (B·V, L)."""
    texts = bounded_texts(flatten_views(views), max_length)  # the input budget (sentcl.files.budget)
    return dict(tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt"))
