"""Binary and int8 indexes (``sentcl.index.quantized``) against references written here in numpy.

The binary reference is hand-written: Hamming distance as the count of dimensions whose signs differ
(no bit packing), the k·r nearest kept, re-ranked by numpy cosine. Hamming distances tie often, so the
ids are compared exactly on the queries whose k·r-th and next distances differ (there the candidate set
is unique), and the recall is compared on all.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from index_fixtures import Fixed, clustered

from sentcl.cli import main
from sentcl.data.shards import encode_shards
from sentcl.index import open_index
from sentcl.index.faiss_build import build_from_shards
from sentcl.index.faiss_params import IndexParams
from sentcl.index.quantized import code_bits, memory_bytes, sign_bits


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def cosine_top(vectors: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-(unit(queries) @ unit(vectors).T), axis=1, kind="stable")[:, :k]  # (Q, k)


def hamming(queries: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """(Q, N) count of dimensions whose signs differ: a loop over dimensions, no packed bits."""
    out = np.zeros((len(queries), len(vectors)), dtype=np.int64)
    for j in range(vectors.shape[1]):
        out += (queries[:, j, None] > 0) != (vectors[None, :, j] > 0)
    return out


def binary_reference(
    vectors: np.ndarray, queries: np.ndarray, k: int, r: int
) -> tuple[np.ndarray, np.ndarray]:
    """(top-k ids by cosine among the k·r Hamming-nearest (Q, k), whether that k·r cut is tie-free (Q,))."""
    h = hamming(queries, vectors)  # (Q, N)
    order = np.argsort(h, axis=1, kind="stable")  # (Q, N)
    wide = min(k * r, len(vectors))
    cand = order[:, :wide]  # (Q, wide)
    sorted_h = np.take_along_axis(h, order, axis=1)  # (Q, N)
    unique_cut = (
        np.ones(len(queries), bool) if wide == len(vectors) else sorted_h[:, wide - 1] < sorted_h[:, wide]
    )
    cos = np.einsum("qwd,qd->qw", unit(vectors)[cand], unit(queries))  # (Q, wide)
    best = np.argsort(-cos, axis=1, kind="stable")[:, :k]  # (Q, k)
    return np.take_along_axis(cand, best, axis=1), unique_cut


def write_vectors(folder: Path, vectors: np.ndarray, shard_size: int = 250) -> Path:
    corpus = folder / "corpus.txt"
    corpus.write_text("".join(f"sentence {i}\n" for i in range(len(vectors))), encoding="utf-8")
    encode_shards(Fixed(vectors), corpus, folder / "emb", shard_size, model_name="fixed")
    return folder / "emb"


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    return float(np.mean([len(set(a) & set(b)) / exact.shape[1] for a, b in zip(found, exact, strict=True)]))


@given(st.integers(1, 40), st.integers(1, 70), st.integers(0, 2**31 - 1))
def test_sign_bits_hold_each_sign_in_order(n: int, dim: int, seed: int) -> None:
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    x[:, ::5] = 0.0  # zero is not positive: bit 0
    codes = sign_bits(x)
    assert codes.shape == (n, code_bits(dim) // 8) and codes.dtype == np.uint8
    for i in range(n):
        for j in range(code_bits(dim)):
            bit = (int(codes[i, j // 8]) >> (j % 8)) & 1
            assert bit == (j < dim and x[i, j] > 0)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.integers(200, 700),
    st.sampled_from([12, 16, 24, 40]),
    st.integers(1, 6),
    st.sampled_from([1, 5, 10]),
    st.integers(0, 2**31 - 1),
)
def test_binary_flat_equals_the_numpy_reference(
    tmp_path_factory: pytest.TempPathFactory, n: int, dim: int, r: int, k: int, seed: int
) -> None:
    vectors = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    queries = np.random.default_rng(seed + 1).standard_normal((30, dim)).astype(np.float32)
    tmp = tmp_path_factory.mktemp("binary")
    params = IndexParams(target_recall=None, refine=r)
    index = open_index(build_from_shards(write_vectors(tmp, vectors), tmp / "idx", "binary", params))
    scores, ids = index.search(queries, k)
    expected, unique_cut = binary_reference(vectors, queries, k, r)
    np.testing.assert_array_equal(ids[unique_cut], expected[unique_cut])
    # every query, ties included: the hits lie within the k·r-th Hamming distance, and no row strictly
    # inside it with a higher cosine than the k-th hit is missing
    h = hamming(queries, vectors)  # (Q, N)
    cut = np.sort(h, axis=1)[:, min(k * r, n) - 1]  # (Q,)
    cos_all = unit(queries) @ unit(vectors).T  # (Q, N)
    for qi in range(len(queries)):
        assert len(set(ids[qi])) == k and (h[qi, ids[qi]] <= cut[qi]).all()
        inside = np.nonzero(h[qi] < cut[qi])[0]
        assert set(inside[cos_all[qi, inside] > scores[qi, -1] + 1e-5]) <= set(ids[qi])
    np.testing.assert_allclose(scores, np.take_along_axis(cos_all, ids, axis=1), atol=1e-5)  # cosines
    assert (np.diff(scores, axis=1) <= 1e-6).all()


DRAWN = clustered(3600, 64, 3)  # one distribution: 3,000 rows indexed, 600 outside queries


@pytest.fixture(scope="module")
def real_like(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """3,000 clustered 64-d vectors as shards: enough bits for Hamming distance to rank usefully."""
    vectors = DRAWN[:3000]
    return write_vectors(tmp_path_factory.mktemp("real_like"), vectors, 500), vectors


def outside(part: int) -> np.ndarray:
    """200 queries from the corpus's distribution that are not in it (part 0, 1 or 2)."""
    return DRAWN[3000 + 200 * part : 3200 + 200 * part]


def test_rescoring_lifts_binary_recall_to_exact(real_like: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    folder, vectors = real_like
    queries = outside(0)
    exact = cosine_top(vectors, queries, 10)
    got = {}
    for r in (1, 4, 300):
        params = IndexParams(target_recall=None, refine=r)
        index = open_index(build_from_shards(folder, tmp_path / f"r{r}", "binary", params))
        assert index.setting() == {"refine": r}
        got[r] = recall(index.search(queries, 10)[1], exact)
        assert got[r] == pytest.approx(recall(binary_reference(vectors, queries, 10, r)[0], exact), abs=0.02)
    assert got[1] < got[4] < got[300] == 1.0  # k·r = N: every row re-scored, exact


@pytest.mark.parametrize(
    ("kind", "extra"), [("binary", {}), ("binary", {"binary_index": "hnsw"}), ("int8", {})]
)
def test_tuned_refine_reaches_the_target_on_held_out_queries(
    real_like: tuple[Path, np.ndarray], tmp_path: Path, kind: str, extra: dict
) -> None:
    """Tuned on 300 rows held out of the index; measured on 200 other queries the index never saw."""
    folder, vectors = real_like
    params = IndexParams(target_recall=0.95, tune_queries=300, **extra)
    out = build_from_shards(folder, tmp_path / kind, kind, params)
    meta = json.loads((out / "index.json").read_text())
    tuned = meta["tuning"]
    assert tuned["reached"] and tuned["recall_at_10"] >= tuned["tuned_to"] == pytest.approx(0.99)
    assert meta["params"]["refine"] == tuned["setting"]["refine"]
    sweep = [row for row in tuned["sweep"] if row.get("ef_search") == tuned["setting"].get("ef_search")]
    cheaper = [row for row in sweep if row["refine"] < tuned["setting"]["refine"]]
    assert all(row["recall_at_10"] < tuned["tuned_to"] for row in cheaper)  # the smallest r that reaches it
    index = open_index(out)
    assert index.setting() == tuned["setting"]
    queries = outside(1)
    assert recall(index.search(queries, 10)[1], cosine_top(vectors, queries, 10)) >= 0.95


def test_memory_of_each_kind(real_like: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    """Codes only: 64 bits (8 bytes) a row for binary flat, 64 bytes for int8, 256 for float; a graph adds links."""
    folder, _ = real_like
    sizes = {}
    for kind, extra in (
        ("flat", {}),
        ("int8", {}),
        ("binary", {}),
        ("binary-hnsw", {"binary_index": "hnsw"}),
    ):
        params = IndexParams(target_recall=None, **extra)
        sizes[kind] = memory_bytes(
            open_index(build_from_shards(folder, tmp_path / kind, kind.split("-")[0], params)).index
        )
    assert (sizes["flat"], sizes["int8"], sizes["binary"]) == (3000 * 256, 3000 * 64, 3000 * 8)
    assert sizes["binary-hnsw"] > sizes["binary"] + 3000 * 32 * 4  # at least the level-0 links, M 32


def test_cli_builds_and_searches_a_binary_hnsw_index(
    real_like: tuple[Path, np.ndarray], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, vectors = real_like
    out = tmp_path / "bin"
    argv = ["index", "build", "--embeddings", str(folder), "--type", "binary", "--binary-index", "hnsw"]
    assert main([*argv, "--output", str(out), "--refine", "8", "--ef-search", "256"]) == 0
    assert "search setting ef_search 256, refine 8" in capsys.readouterr().out
    assert main(["index", "info", str(out)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["search"]["setting"] == {"ef_search": 256, "refine": 8}
    assert info["params"]["binary_index"] == "hnsw"
    params = IndexParams(binary_index="hnsw", refine=8, ef_search=256)  # as the CLI: measured, not tuned
    api = open_index(build_from_shards(folder, tmp_path / "api", "binary", params))
    queries = outside(2)
    np.testing.assert_array_equal(open_index(out).search(queries, 10)[1], api.search(queries, 10)[1])
