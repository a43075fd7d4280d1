"""Anisotropy diagnostics (SimCSE §5 and Appendices F-G): singular spectrum, average cosine, cos by gold score.

* Singular spectrum: σ_1 ≥ σ_2 ≥ … of the embedding matrix W ∈ R^{N×D} (rows are sentence
  embeddings). A spectrum dominated by a few σ means an anisotropic (cone-shaped) space; contrastive
  learning flattens it. Uncentred by default, as the paper plots W itself (the mean direction is
  exactly what anisotropy is about); ``center=True`` subtracts the mean row first (then σ_i² / N are
  the principal-component variances).
* Average cosine: E_{x≠y} cos(f(x), f(y)) over random distinct sentence pairs (Ethayarajh 2019's
  anisotropy estimate); near 1 means all embeddings point one way.
* Similarity by gold score: cos(f(s1), f(s2)) of STS-B pairs grouped by gold rating into
  [0,1), [1,2), [2,3), [3,4), [4,5] (SimCSE Appendix G); a good encoder separates the groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.evaluation.senteval_readers import load_sts_task
from sentcl.files.paths import resolve_data_dir
from sentcl.similarity import unit_rows
from sentcl.types import EncodeFn

GOLD_EDGES = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0)


def singular_spectrum(embeddings: np.ndarray, normalize: bool = True, center: bool = False) -> np.ndarray:
    """Singular values σ_1 ≥ … ≥ σ_min(N,D) of W (N, D), divided by σ_1 when ``normalize``; W − mean if ``center``."""
    w = np.asarray(embeddings, dtype=np.float64)
    if w.ndim != 2 or w.size == 0:
        raise ValueError(f"embeddings must be a non-empty (N, D) array, got shape {w.shape}")
    if center:
        w = w - w.mean(axis=0, keepdims=True)  # (N, D)
    sigma = np.linalg.svd(w, compute_uv=False)  # (min(N, D),), descending
    if normalize:
        if sigma[0] == 0:
            raise ValueError(
                "all singular values are 0 (the matrix is zero), so they cannot be normalised by σ_1"
            )
        sigma = sigma / sigma[0]
    return sigma


def average_cosine(embeddings: np.ndarray, num_pairs: int = 100_000, seed: int = 0) -> float:
    """Mean cos(f(x_i), f(x_j)) over ``num_pairs`` pairs (i, j), i ≠ j, drawn uniformly with replacement.

    With ``num_pairs`` >= N(N−1)/2 every unordered pair is used exactly once instead (no sampling).
    """
    x = unit_rows(np.asarray(embeddings, dtype=np.float64))
    if x.ndim != 2 or len(x) < 2:
        raise ValueError(f"average_cosine needs an (N, D) array with N >= 2, got shape {x.shape}")
    if num_pairs < 1:
        raise ValueError(f"num_pairs must be >= 1, got {num_pairs}")
    n = len(x)
    if num_pairs >= n * (n - 1) // 2:
        i, j = np.triu_indices(n, k=1)
    else:
        rng = np.random.default_rng(seed)
        i = rng.integers(0, n, size=num_pairs)
        j = rng.integers(0, n - 1, size=num_pairs)
        j = j + (j >= i)  # uniform over the n − 1 indices other than i
    return float(np.mean(np.einsum("pd,pd->p", x[i], x[j])))


def group_by_gold(
    cosines: np.ndarray, gold: np.ndarray, edges: Sequence[float] = GOLD_EDGES
) -> dict[str, dict[str, Any]]:
    """Split ``cosines`` into groups [e_k, e_{k+1}) by ``gold`` (the last group closed); per group stats.

    Returns {"0-1": {"cosines": array, "n", "mean", "std", "median"}, …}; a gold value outside
    [edges[0], edges[-1]] is an error (nothing is dropped silently). Empty groups have nan stats.
    """
    cosines, gold = np.asarray(cosines, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    if cosines.shape != gold.shape or cosines.ndim != 1:
        raise ValueError(f"cosines {cosines.shape} and gold {gold.shape} must be equal-length 1-D arrays")
    edges = [float(e) for e in edges]
    if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
        raise ValueError(f"edges must be at least two strictly increasing numbers, got {edges}")
    outside = (gold < edges[0]) | (gold > edges[-1])
    if outside.any():
        raise ValueError(
            f"{int(outside.sum())} gold score(s) lie outside [{edges[0]}, {edges[-1]}], e.g. {gold[outside][0]}"
        )
    groups = np.clip(np.searchsorted(edges, gold, side="right") - 1, 0, len(edges) - 2)  # (N,) group index
    result = {}
    for k in range(len(edges) - 1):
        values = cosines[groups == k]
        stats = (values.mean(), values.std(), np.median(values)) if len(values) else (np.nan,) * 3
        name = f"{edges[k]:g}-{edges[k + 1]:g}"
        result[name] = {
            "cosines": values,
            "n": len(values),
            "mean": float(stats[0]),
            "std": float(stats[1]),
            "median": float(stats[2]),
        }
    return result


def similarity_by_gold(
    encode: EncodeFn, data_dir: str | Path | None, split: str = "test", edges: Sequence[float] = GOLD_EDGES
) -> dict[str, dict[str, Any]]:
    """Cosine of each STS-B ``split`` pair, grouped by gold rating (see :func:`group_by_gold`); default the test split."""
    (pairs,) = load_sts_task(resolve_data_dir(data_dir), "STSBenchmark", split).values()
    sentences = list(dict.fromkeys(s for s1, s2, _ in pairs for s in (s1, s2)))
    emb = np.asarray(encode(sentences))
    if emb.ndim != 2 or emb.shape[0] != len(sentences):
        raise ValueError(f"encode returned shape {emb.shape} for {len(sentences)} sentences; expected (N, D)")
    emb = unit_rows(np.asarray(emb, dtype=np.float64))
    row = {s: i for i, s in enumerate(sentences)}
    first = emb[[row[s1] for s1, _, _ in pairs]]  # (P, D)
    second = emb[[row[s2] for _, s2, _ in pairs]]  # (P, D)
    cosines = np.einsum("pd,pd->p", first, second)  # (P,)
    return group_by_gold(cosines, np.array([g for _, _, g in pairs]), edges)
