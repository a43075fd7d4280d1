"""Alignment and uniformity of sentence embeddings (Wang & Isola 2020), measured as in SimCSE §5.

On L2-normalised embeddings f(x) (lower is better for both):

* ℓ_align = E_{(x, x+) ~ p_pos} ‖f(x) − f(x+)‖^α, with α = 2;
* ℓ_uniform = log E_{x, y ~iid p_data} exp(−t ‖f(x) − f(y)‖²), with t = 2, the expectation taken
  over all distinct pairs {x, y} (x ≠ y) of the given set.

SimCSE's protocol (:func:`alignment_uniformity`): p_pos = STS-B pairs with gold score > 4, p_data =
the distinct STS-B sentences of the same split. The split is a parameter; the default is "dev",
because this metric is tracked during training (SimCSE's Figure 2 plots checkpoints every 10 steps)
and the dev split keeps the test split unseen; pass ``split="test"`` for a final figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import logsumexp

from sentcl.evaluation.senteval_readers import load_sts_task
from sentcl.files.paths import resolve_data_dir
from sentcl.similarity import unit_rows
from sentcl.types import EncodeFn


def alignment(x: np.ndarray, y: np.ndarray, alpha: float = 2.0, normalize: bool = True) -> float:
    """ℓ_align = mean_i ‖f(x_i) − f(y_i)‖^α over the positive pairs (x_i, y_i); x, y: (N, D)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 2 or len(x) == 0:
        raise ValueError(f"x and y must be non-empty (N, D) arrays of one shape, got {x.shape} and {y.shape}")
    if normalize:
        x, y = unit_rows(x), unit_rows(y)
    return float(np.mean(np.linalg.norm(x - y, axis=1) ** alpha))


def uniformity(x: np.ndarray, t: float = 2.0, normalize: bool = True, chunk_size: int = 1024) -> float:
    """ℓ_uniform = log mean_{i<j} exp(−t ‖f(x_i) − f(x_j)‖²) over all N(N−1)/2 distinct pairs; x: (N, D).

    Computed as a log-sum-exp over row blocks of ``chunk_size``, so memory stays O(chunk_size · N).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or len(x) < 2:
        raise ValueError(f"uniformity needs an (N, D) array with N >= 2, got shape {x.shape}")
    if normalize:
        x = unit_rows(np.asarray(x, dtype=np.float64))
    n = len(x)
    sq = np.einsum("nd,nd->n", x, x)  # (N,) squared norms
    block_lse = []
    for start in range(0, n - 1, chunk_size):
        rows = x[start : start + chunk_size]  # (B, D)
        cols = x[start + 1 :]  # (N - start - 1, D): only j > i contributes
        d2 = (
            sq[start : start + len(rows), None] + sq[None, start + 1 :] - 2.0 * rows @ cols.T
        )  # (B, N - start - 1)
        d2 = np.maximum(d2, 0.0)
        i = np.arange(start, start + len(rows))[:, None]  # (B, 1)
        j = np.arange(start + 1, n)[None, :]  # (1, N - start - 1)
        block_lse.append(logsumexp(np.where(j > i, -t * d2, -np.inf)))
    num_pairs = n * (n - 1) / 2
    return float(logsumexp(block_lse) - np.log(num_pairs))


def alignment_uniformity(
    encode: EncodeFn, data_dir: str | Path | None, split: str = "dev", threshold: float = 4.0
) -> dict[str, Any]:
    """SimCSE's ℓ_align (STS-B pairs with gold > ``threshold``) and ℓ_uniform (all distinct STS-B sentences).

    Returns {"alignment", "uniformity", "n_pos", "n_sentences", "split"}; both sets come from ``split``.
    """
    (pairs,) = load_sts_task(resolve_data_dir(data_dir), "STSBenchmark", split).values()
    positives = [(s1, s2) for s1, s2, gold in pairs if gold > threshold]
    if not positives:
        raise ValueError(f"STS-B {split} has no pair with gold score > {threshold}")
    sentences = list(dict.fromkeys(s for s1, s2, _ in pairs for s in (s1, s2)))
    emb = np.asarray(encode(sentences))
    if emb.ndim != 2 or emb.shape[0] != len(sentences):
        raise ValueError(f"encode returned shape {emb.shape} for {len(sentences)} sentences; expected (N, D)")
    row = {s: i for i, s in enumerate(sentences)}
    first = emb[[row[s1] for s1, _ in positives]]  # (P, D)
    second = emb[[row[s2] for _, s2 in positives]]  # (P, D)
    return {
        "alignment": alignment(first, second),
        "uniformity": uniformity(emb),
        "n_pos": len(positives),
        "n_sentences": len(sentences),
        "split": split,
    }
