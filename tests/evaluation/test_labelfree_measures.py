"""The label-free measures against hand-written numpy references (loops over rows, no shared helper)."""

from __future__ import annotations

import numpy as np
import pytest

from sentcl.config.unlabelled import parse_compression
from sentcl.evaluation.labelfree.compression import compression_recall, int8_codes
from sentcl.evaluation.labelfree.measures import neighbour_agreement, rankme, self_retrieval_at_1, top_k

RNG = np.random.default_rng(7)


def ref_rankme(x: np.ndarray) -> float:
    s = np.linalg.svd(x.astype(np.float64), compute_uv=False)
    p = s / np.abs(s).sum() + 1e-7
    return float(np.exp(-(p * np.log(p)).sum()))


def ref_neighbours(score: np.ndarray, k: int, leave_out_self: bool = True) -> list[list[int]]:
    """Per row: columns sorted by (score desc, column asc), self left out, first k."""
    out = []
    for i, row in enumerate(score):
        cols = [j for j in range(len(row)) if not (leave_out_self and j == i)]
        cols.sort(key=lambda j: (-row[j], j))
        out.append(cols[:k])
    return out


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array([[x @ y / np.linalg.norm(x) / np.linalg.norm(y) for y in b] for x in a])


def test_rankme_matches_the_papers_formula() -> None:
    x = RNG.normal(size=(50, 12)) @ np.diag([10, 5, 3, 1, 1, 1, 0.5, 0.1, 0.1, 0.1, 0.01, 0.01])
    assert rankme(x) == pytest.approx(ref_rankme(x), rel=1e-9)
    assert rankme(np.outer(RNG.normal(size=30), RNG.normal(size=8))) == pytest.approx(
        1.0, abs=1e-4
    )  # rank one
    assert rankme(np.eye(8)) == pytest.approx(8.0, rel=1e-5)  # a flat spectrum uses every direction
    with pytest.raises(ValueError, match="zero vector"):
        rankme(np.zeros((4, 3)))


def test_top_k_breaks_ties_by_the_lower_column() -> None:
    score = np.array([[1.0, 2.0, 2.0, 2.0, 0.0], [3.0, 0.0, 3.0, 3.0, 3.0]])
    assert top_k(lambda a, b: score[a:b], 2, 2).tolist() == [[1, 2], [0, 2]]
    assert top_k(lambda a, b: score[a:b], 2, 2, leave_out_self=False).tolist() == [[1, 2], [0, 2]]
    with pytest.raises(ValueError, match="need more than 5"):
        top_k(lambda a, b: score[a:b], 2, 5)


def test_self_retrieval_counts_the_rows_whose_view_finds_them() -> None:
    corpus = RNG.normal(size=(40, 6))
    views = corpus + RNG.normal(scale=0.9, size=corpus.shape)
    expected = np.mean([int(np.argmax(cosine(views[i : i + 1], corpus)[0]) == i) for i in range(len(corpus))])
    assert self_retrieval_at_1(views, corpus) == pytest.approx(expected)
    assert 0.0 < expected < 1.0  # the test has both outcomes
    assert self_retrieval_at_1(corpus, corpus) == 1.0


def test_neighbour_agreement_is_the_overlap_of_top_10_lists() -> None:
    a = RNG.normal(size=(30, 8))
    b = a + RNG.normal(scale=0.5, size=a.shape)
    na, nb = ref_neighbours(cosine(a, a), 10), ref_neighbours(cosine(b, b), 10)
    expected = np.mean([len(set(x) & set(y)) / 10 for x, y in zip(na, nb, strict=True)])
    assert neighbour_agreement(a, b) == pytest.approx(expected)
    assert neighbour_agreement(a, 3.0 * a) == 1.0  # scale-free: a teacher's copy agrees fully


def test_compression_recall_against_hand_written_searches() -> None:
    x = RNG.normal(size=(60, 16))
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    truth = ref_neighbours(cosine(x, x), 10)
    # binary: Hamming distance of the sign bits, counted bit by bit
    bits = [[int(v > 0) for v in row] for row in x]
    hamming = np.array([[-sum(p != q for p, q in zip(r, s, strict=True)) for s in bits] for r in bits], float)
    # int8: 256 bins over each dimension's range, bin centres decoded
    lo, hi = unit.min(0), unit.max(0)
    decoded = np.array(
        [
            [
                lo[j] + (min(int((v - lo[j]) / ((hi[j] - lo[j]) / 256)), 255) + 0.5) * (hi[j] - lo[j]) / 256
                for j, v in enumerate(row)
            ]
            for row in unit
        ]
    )
    searches = {"binary": hamming, "int8": unit @ decoded.T, "4": cosine(x[:, :4], x[:, :4])}
    got = compression_recall(x, ["binary", "int8", "4"])
    for kind, score in searches.items():
        found = ref_neighbours(score, 10)
        expected = np.mean([len(set(f) & set(t)) / 10 for f, t in zip(found, truth, strict=True)])
        assert got[kind] == pytest.approx(expected), kind
    assert got["int8"] > got["4"]  # 8 bits a dimension keep the neighbours far better than 4 of 16 dims
    assert int8_codes(unit)[0].dtype == np.uint8


def test_compression_names_are_checked() -> None:
    assert parse_compression("128") == "128"
    for bad in ("int4", "0", "-3", "half"):
        with pytest.raises(ValueError, match="int8, binary or a truncation"):
            parse_compression(bad)
    with pytest.raises(ValueError, match="only 16 dimensions"):
        compression_recall(RNG.normal(size=(20, 16)), ["16"])
