"""Recall@k of compressed sentence vectors against the float ones, on the user's own sentences.

Each sentence in turn is the query and every other sentence the corpus; the float search ranks by cosine of the
unit vectors, the compressed search by what the compressed form alone gives, with no re-scoring by the floats
(the price of the compression itself; ``sentcl index`` re-scores its binary and int8 indexes, see
``sentcl.index.quantized``, and the index's own recall is ``sentcl.evaluation.labelfree.index_recall``):

* ``int8``: each dimension of the unit vectors mapped to 256 levels over its range on these sentences
  (the scheme of faiss' 8-bit scalar quantiser), x̂ = lo + (q + ½)(hi − lo) / 256; scores q_float · x̂;
* ``binary``: sign bits of the unit vectors (``sentcl.index.quantized.sign_bits``' rule, x_j > 0), ranked by
  Hamming distance, ties by the lower row;
* a whole number k: the first k coordinates (a Matryoshka truncation), re-normalised, ranked by cosine.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sentcl.evaluation.labelfree.measures import ScoreRows, cosine_rows, overlap_at_k, top_k
from sentcl.similarity import unit_rows

DEFAULT_COMPRESSIONS = ("int8", "binary")


def int8_codes(unit: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(codes (N, D) uint8, lo (D,), step (D,)): each dimension's range [lo, hi] cut into 256 equal bins."""
    lo, hi = unit.min(axis=0), unit.max(axis=0)  # (D,)
    step = np.where(hi > lo, (hi - lo) / 256.0, 1.0)  # (D,)
    codes = np.clip(np.floor((unit - lo) / step), 0, 255).astype(np.uint8)  # (N, D)
    return codes, lo, step


def int8_scores(embeddings: np.ndarray) -> ScoreRows:
    unit = unit_rows(np.asarray(embeddings, dtype=np.float64))
    codes, lo, step = int8_codes(unit)
    decoded = lo + (codes.astype(np.float64) + 0.5) * step  # (N, D)
    return lambda start, stop: unit[start:stop] @ decoded.T  # (B, N)


def binary_scores(embeddings: np.ndarray) -> ScoreRows:
    bits = (np.asarray(embeddings) > 0).astype(np.float32)  # (N, D); the sign of x equals that of x / |x|
    ones = bits.sum(axis=1)  # (N,)

    def score(start: int, stop: int) -> np.ndarray:
        same_ones = bits[start:stop] @ bits.T  # (B, N): bits set in both
        hamming = ones[start:stop, None] + ones[None, :] - 2.0 * same_ones  # (B, N)
        return -hamming

    return score


def compressed_scores(embeddings: np.ndarray, kind: str) -> ScoreRows:
    if kind == "int8":
        return int8_scores(embeddings)
    if kind == "binary":
        return binary_scores(embeddings)
    dim = int(kind)
    if dim >= embeddings.shape[1]:
        raise ValueError(f"--compression {dim}: the embeddings have only {embeddings.shape[1]} dimensions")
    prefix = embeddings[:, :dim]  # (N, dim)
    return cosine_rows(prefix, prefix)


def compression_recall(embeddings: np.ndarray, kinds: Sequence[str], k: int = 10) -> dict[str, float]:
    """{kind: recall@k of the compressed search against the float cosine search} over every sentence."""
    n = len(embeddings)
    truth = top_k(cosine_rows(embeddings, embeddings), n, k)  # (N, k)
    return {kind: overlap_at_k(top_k(compressed_scores(embeddings, kind), n, k), truth) for kind in kinds}
