"""Length-bucketed encoding: run the encoder on length-homogeneous micro-batches instead of one padded batch.

A step's rows are padded to the batch's longest row, so the encoder spends part of its work on padding
(about a third for wiki sentences at max length 32). Sorting the rows by length and encoding a few
contiguous groups, each trimmed to its own longest row, removes most of it. It is exact: a padded key
column is masked out of every softmax and a padded query row reaches no pooled output, so each row's
embedding is the same function of its own tokens (the same loss and gradient up to float rounding), and
every row still draws its own dropout mask. The embeddings are put back in the rows' original order.

The split points minimise the padded area Σ_b n_b · L_b (n_b rows of length at most L_b in bucket b) over
at most ``max_buckets`` contiguous groups of the sorted lengths: a small dynamic programme over the
distinct lengths.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor


def row_lengths(attention_mask: Tensor) -> Tensor:
    """Per row, one past its last attended position (a cut-off token inside a row keeps the row's length)."""
    positions = torch.arange(1, attention_mask.size(1) + 1, device=attention_mask.device)  # (L,)
    return (attention_mask.ne(0) * positions).amax(dim=1)  # (N,)


def split_points(sorted_lengths: list[int], max_buckets: int) -> list[int]:
    """Bucket ends (exclusive row indices) for ascending lengths: at most ``max_buckets`` groups, least padding.

    A group may only end where the length changes, so the search runs over the M distinct lengths:
    cost[k][j] = min_i cost[k-1][i] + (C_j - C_i) · u_j, with u the distinct lengths and C their
    cumulative counts; O(max_buckets · M²) with numpy.
    """
    if max_buckets <= 0:
        raise ValueError(f"max_buckets must be positive, got {max_buckets}")
    values, counts = np.unique(np.asarray(sorted_lengths, dtype=np.int64), return_counts=True)
    cum = np.concatenate([[0], np.cumsum(counts)])  # (M+1,)
    m = len(values)
    buckets = min(max_buckets, m)
    # area[i, j]: rows i..j-1 (distinct-length indices, exclusive end j) padded to values[j-1]
    u = np.concatenate([[0], values])  # (M+1,): u[j] is the length of a group ending at j
    area = (cum[None, :] - cum[:, None]) * u[None, :]  # (M+1, M+1)
    area = np.where(np.arange(m + 1)[:, None] < np.arange(m + 1)[None, :], area, np.inf)  # i < j only
    cost = area[0].copy()  # (M+1,): one group covering 0..j-1
    choice = [np.zeros(m + 1, dtype=np.int64)]
    for _ in range(1, buckets):
        total = cost[:, None] + area  # (M+1, M+1): best with the previous groups ending at i, then i..j-1
        best = total.argmin(axis=0)  # (M+1,)
        better = total[best, np.arange(m + 1)] < cost
        cost = np.where(better, total[best, np.arange(m + 1)], cost)
        choice.append(np.where(better, best, -1))
    ends, j = [], m
    for level in range(len(choice) - 1, -1, -1):  # walk back from the full range
        i = int(choice[level][j])
        if i == -1:  # this level did not improve on fewer groups
            continue
        ends.append(int(cum[j]))
        j = i
        if j == 0:
            break
    return sorted(ends)


def bucketed(
    encode: Callable[[dict[str, Tensor]], Tensor], rows: dict[str, Tensor], max_buckets: int
) -> Tensor:
    """``encode`` over length-sorted micro-batches of ``rows`` (N, L, ...), returned in row order: (N, D).

    ``encode`` maps a dict of row tensors (same keys as ``rows``) to one embedding per row. Only trailing
    unattended columns are trimmed, so a left-padded batch (every row reaching the last column) runs as one.
    """
    mask = rows["attention_mask"]
    lengths = row_lengths(mask)  # (N,)
    if max_buckets <= 1:
        return encode(rows)
    order = torch.argsort(lengths, stable=True)  # (N,)
    sorted_lengths = lengths[order].tolist()
    parts, start = [], 0
    for end in split_points(sorted_lengths, max_buckets):
        index = order[start:end]
        width = sorted_lengths[end - 1]
        parts.append(encode({k: v[index, :width] for k, v in rows.items()}))  # (n_b, D) from (n_b, L_b, ...)
        start = end
    inverse = torch.argsort(order)  # (N,): where each original row stands in the sorted order
    return torch.cat(parts)[inverse]  # (N, D)
