"""The rule that cuts length-sorted sentences into forward passes, read directly (the reference that
``modeling.batching.plan_batches`` and the service's ``next_pass`` are tested against)."""

from __future__ import annotations


def allowed(lengths: list[int], batch_size: int, max_cells: int, max_padding: float) -> bool:
    """One pass of these sentences (longest first) is allowed: a lone sentence always, else within the
    sentence count, the padded cells and the padding's share of the real tokens."""
    if len(lengths) == 1:
        return True
    cells = len(lengths) * max(lengths)
    padding = sum(max(lengths) - n for n in lengths)
    return len(lengths) <= batch_size and cells <= max_cells and padding <= max_padding * sum(lengths)


def brute_force(
    lengths: list[int], batch_size: int, max_cells: int, max_padding: float
) -> list[tuple[int, int]]:
    """Each pass the longest run from where the last ended that the rule allows, trying every end."""
    spans, start = [], 0
    while start < len(lengths):
        end = max(
            e
            for e in range(start + 1, len(lengths) + 1)
            if allowed(lengths[start:e], batch_size, max_cells, max_padding)
        )
        spans.append((start, end))
        start = end
    return spans
