"""Common components removed from a static table: its sentence vectors' mean and top principal directions.

Arora, Liang & Ma ("A simple but tough-to-beat baseline for sentence embeddings") remove the first principal
component of their sentence vectors; Mu & Viswanath ("All-but-the-Top: simple and effective postprocessing for
word representations") remove the mean and the top directions of word vectors. Here the vectors are the static
student's own sentence vectors of its fit corpus (the mean of each sentence's rows): their mean c and their top k
principal directions U (k, D) give v -> (v - c) - (v - c) U^T U. The map is affine and a mean of rows commutes
with it (every row minus c, then projected), so it is folded into the table: the folder stays one vector per
token and its encode costs nothing more. k is the recipe's ``components``; our reading of the papers' choice for
a static student: 3 of 256 dimensions, chosen on STS-B dev (docs/results/static-students-cpu.md), where
Mu & Viswanath's rule of D/100 gives 2.56.

The weighted form (``sentcl.modeling.static_weighted``) folds the same map: its weights sum to s = 1 + sum_h g_h
for every text, so v - c = sum_j w_j (E_j - c/s), and each row becomes (E_j - c/s) projected.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from sentcl.modeling.static import bag_mean
from sentcl.modeling.static_tokens import TokenRows
from sentcl.modeling.static_weighted import WeightedMean

CHUNK = 8192  # sentences a pass: the statistics are sums, so memory stays (CHUNK, D) + (D, D)


@dataclass(frozen=True)
class Components:
    mean: np.ndarray  # (D,) the sentence vectors' mean
    directions: np.ndarray  # (k, D) their top principal directions, unit rows
    explained: float  # the share of the centred vectors' variance along them


def common_components(
    table: np.ndarray | WeightedMean, token_lists: Sequence[Sequence[int]], k: int
) -> Components:
    """The mean and top ``k`` principal directions of the sentence vectors of ``token_lists`` under ``table``
    (a one-table form's rows, or the weighted form), texts without a token left out."""
    lists = [ids for ids in token_lists if len(ids)]
    pool = table if isinstance(table, WeightedMean) else (lambda rows: bag_mean(table, rows))
    return components_of((pool(TokenRows.of(lists[s : s + CHUNK])) for s in range(0, len(lists), CHUNK)), k)


def components_of(chunks: Iterable[np.ndarray], k: int) -> Components:
    """The mean and top ``k`` principal directions of sentence vectors given in chunks (B, D), from their sums:
    memory stays one chunk and (D, D)."""
    total = outer = None
    n = 0
    for chunk in chunks:
        v = np.asarray(chunk, dtype=np.float64)  # (B, D)
        total = v.sum(axis=0) if total is None else total + v.sum(axis=0)
        outer = v.T @ v if outer is None else outer + v.T @ v  # (D, D)
        n += len(v)
    if total is None or n <= k:
        raise ValueError(f"removing {k} components needs more than {k} sentences with tokens, got {n}")
    mean = total / n  # (D,)
    scatter = outer - n * np.outer(mean, mean)  # (D, D): the centred vectors' scatter
    values, vectors = np.linalg.eigh(scatter)  # ascending
    top = vectors[:, ::-1][:, :k].T  # (k, D)
    explained = float(values[::-1][:k].sum() / max(values.sum(), 1e-30))
    return Components(mean.astype(np.float32), top.astype(np.float32), explained)


def remove_components(table: np.ndarray, found: Components, total_weight: float = 1.0) -> np.ndarray:
    """``table`` (V, D) with the components folded in: every row minus the mean (over ``total_weight``, what a
    text's weights sum to: 1 for a mean), then projected off the directions (V, D)."""
    if abs(total_weight) < 1e-3:
        raise ValueError(
            f"the weighted form's weights sum to {total_weight:.2g}: the mean cannot be folded into its rows "
            "(a fit that diverged: a smaller learning rate)"
        )
    centred = table - found.mean / total_weight  # (V, D)
    return (centred - (centred @ found.directions.T) @ found.directions).astype(np.float32)  # (V, D)
