"""Singular spectrum, average cosine and cosine-by-gold grouping against numpy / hand loops."""

from __future__ import annotations

import math
import zlib
from pathlib import Path

import numpy as np
import pytest

from sentcl.evaluation.spectrum import average_cosine, group_by_gold, similarity_by_gold, singular_spectrum


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b) / math.sqrt(float(a @ a) * float(b @ b))


def test_singular_spectrum_matches_numpy_svd() -> None:
    w = np.random.default_rng(0).normal(size=(40, 12)) + 2.0  # a shared offset: anisotropic
    sigma = np.linalg.svd(w, compute_uv=False)
    np.testing.assert_allclose(singular_spectrum(w, normalize=False), sigma, rtol=1e-12)
    np.testing.assert_allclose(singular_spectrum(w), sigma / sigma[0], rtol=1e-12)
    centred = w - w.mean(axis=0)
    # σ_i² of the centred matrix are the eigenvalues of its scatter matrix (an independent route).
    eig = np.sort(np.linalg.eigvalsh(centred.T @ centred))[::-1]
    np.testing.assert_allclose(singular_spectrum(w, normalize=False, center=True) ** 2, eig, rtol=1e-9)
    # The offset makes the uncentred spectrum dominated by σ_1; centring removes that.
    assert singular_spectrum(w)[1] < 0.3 < singular_spectrum(w, center=True)[1]


def test_rank_one_spectrum() -> None:
    w = np.outer(np.arange(1.0, 6.0), np.array([1.0, -2.0, 0.5]))  # rank 1
    np.testing.assert_allclose(singular_spectrum(w), [1.0, 0.0, 0.0], atol=1e-12)
    with pytest.raises(ValueError, match="zero"):
        singular_spectrum(np.zeros((3, 2)))


def test_average_cosine_all_pairs_matches_loop() -> None:
    x = np.random.default_rng(1).normal(size=(15, 5)) + 0.5
    expected = np.mean([cos(x[i], x[j]) for i in range(15) for j in range(i + 1, 15)])
    assert average_cosine(x, num_pairs=10_000) == pytest.approx(expected, rel=1e-12)  # 10k >= 105 pairs


def test_average_cosine_sampling() -> None:
    x = np.random.default_rng(2).normal(size=(60, 5)) + 0.7
    exact = np.mean([cos(x[i], x[j]) for i in range(60) for j in range(60) if i != j])
    assert average_cosine(x, num_pairs=200_000, seed=0) == pytest.approx(exact, abs=0.01)
    # Orthonormal rows: every distinct pair has cosine 0, a pair (i, i) would add 1.
    assert average_cosine(np.eye(50), num_pairs=500, seed=3) == 0.0
    assert average_cosine(np.ones((4, 3)), num_pairs=2) == pytest.approx(1.0)


def test_group_by_gold_matches_hand_bucketing() -> None:
    rng = np.random.default_rng(4)
    gold = np.concatenate([rng.uniform(0, 5, size=200), [0.0, 1.0, 2.0, 4.0, 5.0, 4.999]])
    cosines = rng.uniform(-1, 1, size=len(gold))
    result = group_by_gold(cosines, gold)
    assert list(result) == ["0-1", "1-2", "2-3", "3-4", "4-5"]
    for k, name in enumerate(result):
        lo, hi = float(k), float(k + 1)
        members = [c for c, g in zip(cosines, gold, strict=True) if lo <= g < hi or (hi == 5.0 and g == 5.0)]
        assert result[name]["n"] == len(members)
        assert sorted(result[name]["cosines"]) == sorted(members)
        assert result[name]["mean"] == pytest.approx(sum(members) / len(members))
    assert sum(g["n"] for g in result.values()) == len(gold)


def test_group_by_gold_rejects_out_of_range() -> None:
    with pytest.raises(ValueError, match="outside"):
        group_by_gold(np.zeros(2), np.array([1.0, 5.5]))


def hash_encoder(texts: list[str], dim: int = 16) -> np.ndarray:
    table = np.random.default_rng(1).normal(size=(1024, dim))
    out = np.full((len(texts), dim), 1e-3)
    for i, text in enumerate(texts):
        for word in text.lower().split():
            out[i] += table[zlib.crc32(word.encode()) % 1024]
    return out


def test_similarity_by_gold_on_stsb_test(data_dir: Path) -> None:
    counts = [0] * 5
    pairs = []
    for line in (
        (data_dir / "senteval" / "STS" / "STSBenchmark" / "sts-test.csv")
        .read_text(encoding="utf-8")
        .splitlines()
    ):
        f = line.split("\t")
        score = float(f[4])
        counts[min(int(score), 4)] += 1
        pairs.append((" ".join(f[5].split()), " ".join(f[6].split()), score))
    result = similarity_by_gold(hash_encoder, data_dir)
    assert [g["n"] for g in result.values()] == counts
    assert sum(counts) == 1379
    top = [cos(*hash_encoder([a, b])) for a, b, s in pairs if s >= 4]
    assert sorted(result["4-5"]["cosines"]) == pytest.approx(sorted(top), rel=1e-9)
