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
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from sentcl.modeling.static import bag_mean

CHUNK = 8192  # sentences a pass: the statistics are sums, so memory stays (CHUNK, D) + (D, D)


@dataclass(frozen=True)
class Components:
    mean: np.ndarray  # (D,) the sentence vectors' mean
    directions: np.ndarray  # (k, D) their top principal directions, unit rows
    explained: float  # the share of the centred vectors' variance along them


def common_components(table: np.ndarray, token_lists: Sequence[Sequence[int]], k: int) -> Components:
    """The mean and top ``k`` principal directions of the sentence vectors of ``token_lists`` under ``table``
    (texts without a token left out)."""
    lists = [ids for ids in token_lists if len(ids)]
    return components_of((bag_mean(table, lists[s : s + CHUNK]) for s in range(0, len(lists), CHUNK)), k)


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


def remove_components(table: np.ndarray, found: Components) -> np.ndarray:
    """``table`` (V, D) with the components folded in: every row minus the mean, then projected off the
    directions (V, D)."""
    centred = table - found.mean  # (V, D)
    return (centred - (centred @ found.directions.T) @ found.directions).astype(np.float32)  # (V, D)
