"""Length-sorted inference batches, shared by ``SentenceEncoder.encode`` and ``OnnxEncoder.encode``.

Sentences are tokenized once, ordered longest first (a stable sort, so ties keep input order) and padded a
batch at a time: each batch pads to its own longest sentence, which saves most of the padding of random
order. The caller writes each batch's rows back with its indices (or un-permutes with ``order``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from sentcl.config.typed import check_max_length
from sentcl.files.budget import bounded_texts


def length_sorted_batches(
    tokenizer: Any,
    texts: Sequence[str],
    max_length: int,
    batch_size: int,
    return_tensors: str,
    show_progress: bool = False,
) -> tuple[np.ndarray, Iterator[tuple[np.ndarray, Any]]]:
    """``(order, batches)``: ``order`` the input indices longest first; ``batches`` yields (indices, the padded
    tokenizer batch of those sentences as ``return_tensors``) in that order, with a progress bar if asked.
    ``max_length`` below 3 is refused (``check_max_length``): no room for a real token, or no truncation at all."""
    check_max_length("max_length", max_length)
    bounded = bounded_texts(texts, max_length)  # the input budget: no tokenizer reads a whole 44 MB line
    ids = tokenizer(bounded, truncation=True, max_length=max_length)["input_ids"] if texts else []
    order = np.argsort([-len(x) for x in ids], kind="stable")

    def batches() -> Iterator[tuple[np.ndarray, Any]]:
        starts = range(0, len(ids), batch_size)
        for start in tqdm(starts, desc="encode", disable=not show_progress, leave=False):
            idx = order[start : start + batch_size]
            yield idx, tokenizer.pad({"input_ids": [ids[i] for i in idx]}, return_tensors=return_tensors)

    return order, batches()
