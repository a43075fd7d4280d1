"""Label-free measures on (N, D) embedding matrices, in numpy; each names its paper.

* RankMe (Garrido, Balestriero, Najman and LeCun, 2023, "RankMe: Assessing the Downstream Performance of
  Pretrained Self-Supervised Representations by Their Rank"): with σ_1 ≥ … ≥ σ_min(N,D) the singular values of
  the (uncentred) embedding matrix, p_k = σ_k / ‖σ‖_1 + ε (ε = 1e-7, the paper's), RankMe = exp(−Σ_k p_k log p_k),
  a smooth count of the directions the embeddings use, between 1 and min(N, D).
* Self-retrieval@1: the share of sentences whose perturbed view (a word-deletion copy) has the sentence itself
  as its nearest neighbour by cosine among all N sentences (ties go to the lower row, so a tie counts only when
  the sentence is the lowest tied row).
* Neighbour agreement@k: the mean overlap |N_k^a(i) ∩ N_k^b(i)| / k of each sentence's k nearest neighbours
  (itself left out) under two embeddings of the same sentences: a student against its teacher, or compressed
  vectors against the float ones (then it is the compressed search's recall@k against the float search).

Alignment and uniformity (Wang and Isola, 2020) are ``sentcl.evaluation.alignment_uniformity``; the mean cosine
of random pairs (Ethayarajh, 2019) is ``sentcl.evaluation.spectrum.average_cosine``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sentcl.evaluation.spectrum import singular_spectrum
from sentcl.similarity import unit_rows

RANKME_EPS = 1e-7
BLOCK_ROWS = 1024

#: (row start, row stop) -> the scores of those rows against every row, (B, N); higher is nearer
ScoreRows = Callable[[int, int], np.ndarray]


def rankme(embeddings: np.ndarray, eps: float = RANKME_EPS) -> float:
    """RankMe of ``embeddings`` (N, D): exp of the entropy of the L1-normalised singular values (+ ε)."""
    sigma = singular_spectrum(embeddings, normalize=False)  # (min(N, D),)
    total = float(np.sum(sigma))
    if total == 0.0:
        raise ValueError("every embedding is the zero vector: RankMe is undefined")
    p = sigma / total + eps
    return float(np.exp(-np.sum(p * np.log(p))))


def cosine_rows(queries: np.ndarray, corpus: np.ndarray) -> ScoreRows:
    """The cosine scorer of ``queries`` (Q, D) against ``corpus`` (N, D)."""
    q = unit_rows(np.asarray(queries, dtype=np.float32))
    c = unit_rows(np.asarray(corpus, dtype=np.float32))
    return lambda start, stop: q[start:stop] @ c.T  # (B, N)


def top_k(scores: ScoreRows, rows: int, k: int, leave_out_self: bool = True) -> np.ndarray:
    """The k best columns of each of ``rows`` score rows (score descending, then column ascending): (rows, k);
    with ``leave_out_self`` row i never lists column i."""
    out = []
    for start in range(0, rows, BLOCK_ROWS):
        s = np.array(scores(start, min(start + BLOCK_ROWS, rows)), dtype=np.float64)  # (B, N)
        if leave_out_self:
            b = np.arange(len(s))
            s[b, start + b] = -np.inf
        if k > s.shape[1] - int(leave_out_self):
            raise ValueError(f"top-{k} neighbours need more than {k} sentences, got {s.shape[1]}")
        kth = -np.partition(-s, k - 1, axis=1)[:, k - 1]  # (B,): each row's k-th best score
        for row, bound in zip(s, kth, strict=True):
            cols = np.flatnonzero(row >= bound)  # the candidates, ties with the k-th included
            out.append(cols[np.lexsort((cols, -row[cols]))[:k]])  # by score desc, ties by lower column
    return np.stack(out) if out else np.zeros((0, k), dtype=np.int64)  # (rows, k)


def self_retrieval_at_1(views: np.ndarray, corpus: np.ndarray) -> float:
    """Share of rows i whose view ``views[i]`` has ``corpus[i]`` as its nearest corpus row (cosine)."""
    if views.shape != corpus.shape:
        raise ValueError(f"views {views.shape} and corpus {corpus.shape} must have one shape")
    nearest = top_k(cosine_rows(views, corpus), len(views), 1, leave_out_self=False)[:, 0]  # (N,)
    return float(np.mean(nearest == np.arange(len(views))))


def overlap_at_k(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean |found_i ∩ truth_i| / k over the rows of two (N, k) neighbour lists."""
    k = truth.shape[1]
    return float(
        np.mean([len(set(a.tolist()) & set(b.tolist())) / k for a, b in zip(found, truth, strict=True)])
    )


def neighbour_agreement(a: np.ndarray, b: np.ndarray, k: int = 10) -> float:
    """Mean overlap of each sentence's top-k cosine neighbours (itself left out) under ``a`` and ``b``."""
    if len(a) != len(b):
        raise ValueError(f"the two embeddings cover {len(a)} and {len(b)} sentences; they must match")
    return overlap_at_k(top_k(cosine_rows(a, a), len(a), k), top_k(cosine_rows(b, b), len(b), k))
