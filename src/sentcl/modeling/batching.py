"""Length-sorted, padding-aware inference batches, shared by every ``encode`` (``SentenceEncoder``,
``OnnxEncoder``) and by the service's batcher.

Sentences are tokenized once and ordered longest first (a stable sort, so ties keep input order). The sorted
list is then cut into forward passes by one rule (``plan_batches``): a pass grows while it holds at most
``batch_size`` sentences, its padded cells (sentences × its longest sentence's tokens) stay within
``max_cells``, and the padding it adds stays within ``max_padding`` of the real tokens it holds. A pass's
first sentence always goes in. Each pass pads to its own longest sentence; the caller writes each pass's rows
back with its indices (or un-permutes with ``order``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from sentcl.config.typed import check_max_length
from sentcl.files.budget import bounded_texts
from sentcl.modeling.tokenizer_checks import quiet_rust_panics

MAX_PADDING = 0.25  # padded cells a pass may add, as a share of the real tokens it holds
MAX_CELLS = 4096  # sentences × longest sentence's tokens in one pass


def plan_batches(
    lengths: Sequence[int],
    batch_size: int,
    max_cells: int = MAX_CELLS,
    max_padding: float = MAX_PADDING,
) -> list[tuple[int, int]]:
    """The passes ``[(start, end), ...]`` over ``lengths`` (tokens per sentence, longest first), covering it
    in order. A pass extends while the next sentence keeps it within ``batch_size`` sentences, ``max_cells``
    padded cells and ``max_padding`` × real tokens of padding. Padding's share only grows as shorter
    sentences join, so the first refusal ends the pass."""
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    spans: list[tuple[int, int]] = []
    start = 0
    while start < len(lengths):
        longest, real, end = lengths[start], lengths[start], start + 1
        while end < len(lengths):
            size, tokens = end - start + 1, real + lengths[end]
            cells = size * longest
            if size > batch_size or cells > max_cells or cells - tokens > max_padding * tokens:
                break
            real, end = tokens, end + 1
        spans.append((start, end))
        start = end
    return spans


def token_ids(tokenizer: Any, texts: Sequence[str], max_length: int) -> list[list[int]]:
    """Each text's token ids, truncated to ``max_length``: the ids alone (no segment ids, no mask, which the
    passes' padding makes), a cheaper call of a fast tokenizer (``python -m bench.onnx_int8``,
    ``tokenizer_call_per_s``)."""
    if not texts:
        return []
    bounded = bounded_texts(texts, max_length)  # the input budget: no tokenizer reads a whole 44 MB line
    fields = {"return_token_type_ids": False, "return_attention_mask": False}
    with quiet_rust_panics():  # a panic is one line of sentcl's, never Rust's report as well
        return tokenizer(bounded, truncation=True, max_length=max_length, **fields)["input_ids"]


def length_sorted_batches(
    tokenizer: Any,
    texts: Sequence[str],
    max_length: int,
    batch_size: int,
    return_tensors: str,
    show_progress: bool = False,
    max_cells: int = MAX_CELLS,
    max_padding: float = MAX_PADDING,
) -> tuple[np.ndarray, Iterator[tuple[np.ndarray, Any]]]:
    """``(order, batches)``: ``order`` the input indices longest first; ``batches`` yields (indices, the padded
    tokenizer batch of those sentences as ``return_tensors``) in that order, cut by ``plan_batches``, with a
    progress bar if asked. ``max_length`` below 3 is refused (``check_max_length``): no room for a real
    token, or no truncation at all."""
    check_max_length("max_length", max_length)
    ids = token_ids(tokenizer, texts, max_length)
    order = np.argsort([-len(x) for x in ids], kind="stable")
    spans = plan_batches([len(ids[i]) for i in order], batch_size, max_cells, max_padding)

    def batches() -> Iterator[tuple[np.ndarray, Any]]:
        for start, end in tqdm(spans, desc="encode", disable=not show_progress, leave=False):
            idx = order[start:end]
            yield idx, tokenizer.pad({"input_ids": [ids[i] for i in idx]}, return_tensors=return_tensors)

    return order, batches()
