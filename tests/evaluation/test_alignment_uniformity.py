"""Alignment / uniformity (Wang & Isola 2020) against direct loops, closed forms and scipy."""

from __future__ import annotations

import math
import zlib
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from sentcl.evaluation.alignment_uniformity import alignment, alignment_uniformity, uniformity


def unit(v: np.ndarray) -> np.ndarray:
    return v / math.sqrt(float(v @ v))


def loop_alignment(x: np.ndarray, y: np.ndarray, alpha: float = 2.0) -> float:
    total = 0.0
    for a, b in zip(x, y, strict=True):
        diff = unit(a) - unit(b)
        total += math.sqrt(float(diff @ diff)) ** alpha
    return total / len(x)


def loop_uniformity(x: np.ndarray, t: float = 2.0) -> float:
    terms = []
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            diff = unit(x[i]) - unit(x[j])
            terms.append(math.exp(-t * float(diff @ diff)))
    return math.log(sum(terms) / len(terms))


@pytest.fixture()
def vectors() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    return rng.normal(size=(23, 6)), rng.normal(size=(23, 6))


def test_alignment_matches_loop(vectors: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = vectors
    assert alignment(x, y) == pytest.approx(loop_alignment(x, y), rel=1e-12)
    assert alignment(x, y, alpha=1.0) == pytest.approx(loop_alignment(x, y, alpha=1.0), rel=1e-12)


def test_alignment_without_normalisation_uses_raw_vectors() -> None:
    x, y = np.array([[3.0, 0.0]]), np.array([[0.0, 4.0]])
    assert alignment(x, y, normalize=False) == pytest.approx(25.0)  # ‖(3, −4)‖² = 25
    assert alignment(x, y) == pytest.approx(2.0)  # unit vectors at 90°: ‖e1 − e2‖² = 2


@pytest.mark.parametrize("chunk_size", [1, 4, 2048])
def test_uniformity_matches_loop(vectors: tuple[np.ndarray, np.ndarray], chunk_size: int) -> None:
    x, _ = vectors
    assert uniformity(x, chunk_size=chunk_size) == pytest.approx(loop_uniformity(x), rel=1e-10)
    assert uniformity(x, t=0.5, chunk_size=chunk_size) == pytest.approx(loop_uniformity(x, t=0.5), rel=1e-10)


def test_extremes() -> None:
    same = np.tile(np.array([[0.3, -1.2, 2.0]]), (5, 1))
    assert alignment(same, same) == pytest.approx(0.0, abs=1e-12)
    assert uniformity(same) == pytest.approx(0.0, abs=1e-12)  # log E exp(0) = 0: total collapse
    x = np.random.default_rng(0).normal(size=(9, 4))
    assert alignment(x, -x) == pytest.approx(4.0)  # ‖u − (−u)‖² = 4 for unit u
    # An orthonormal set: every pair is at squared distance 2, so uniformity = log exp(−2·2) = −4.
    assert uniformity(np.eye(7)) == pytest.approx(-4.0)


def test_bad_shapes_are_errors() -> None:
    with pytest.raises(ValueError, match="one shape"):
        alignment(np.zeros((3, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="N >= 2"):
        uniformity(np.zeros((1, 2)))


def hash_encoder(texts: list[str], dim: int = 16) -> np.ndarray:
    """Bag of words, each word a fixed random vector chosen by its CRC32."""
    table = np.random.default_rng(1).normal(size=(1024, dim))
    out = np.zeros((len(texts), dim))
    for i, text in enumerate(texts):
        for word in text.lower().split():
            out[i] += table[zlib.crc32(word.encode()) % 1024]
    return out + 1e-3  # no zero row


def read_stsb_by_hand(path: Path) -> list[tuple[str, str, float]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        f = line.split("\t")
        rows.append((" ".join(f[5].split()), " ".join(f[6].split()), float(f[4])))
    return rows


def test_protocol_on_stsb_dev(data_dir: Path) -> None:
    rows = read_stsb_by_hand(data_dir / "senteval" / "STS" / "STSBenchmark" / "sts-dev.csv")
    positives = [(a, b) for a, b, g in rows if g > 4]
    sentences = sorted({s for a, b, _ in rows for s in (a, b)})
    result = alignment_uniformity(hash_encoder, data_dir, split="dev")
    assert result["split"] == "dev"
    assert result["n_pos"] == len(positives) > 100
    assert result["n_sentences"] == len(sentences)
    emb_a, emb_b = hash_encoder([a for a, _ in positives]), hash_encoder([b for _, b in positives])
    assert result["alignment"] == pytest.approx(loop_alignment(emb_a, emb_b), rel=1e-9)
    emb = hash_encoder(sentences)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    expected_uniform = math.log(np.mean(np.exp(-2.0 * pdist(emb, "sqeuclidean"))))
    assert result["uniformity"] == pytest.approx(expected_uniform, rel=1e-9)
