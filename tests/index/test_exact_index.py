"""Retrieval: exact top-k against a brute-force loop, chunking, faiss adapter (fake module), save/load."""

from __future__ import annotations

import json
import math
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import sentcl.index.exact as retrieval
from sentcl.index.exact import ExactIndex, FaissIndex, build_index, load_index, search


def brute_force(corpus: np.ndarray, queries: np.ndarray, k: int, cosine: bool = True) -> tuple[list, list]:
    """Score every (query, row) with a Python loop, sort by (score desc, index asc), keep k."""
    all_scores, all_ids = [], []
    for q in queries:
        scored = []
        for j, c in enumerate(corpus):
            dot = sum(float(a) * float(b) for a, b in zip(q, c, strict=True))
            if cosine:
                dot /= math.sqrt(sum(float(a) ** 2 for a in q)) * math.sqrt(sum(float(b) ** 2 for b in c))
            scored.append((-dot, j))
        best = sorted(scored)[:k]
        all_scores.append([-s for s, _ in best])
        all_ids.append([j for _, j in best])
    return all_scores, all_ids


@pytest.fixture()
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(57, 8)), rng.normal(size=(6, 8))


@pytest.mark.parametrize(("chunk_size", "query_chunk_size"), [(1, 1), (5, 4), (16, 1024), (57, 2), (1000, 6)])
def test_exact_search_matches_brute_force(
    data: tuple[np.ndarray, np.ndarray], chunk_size: int, query_chunk_size: int
) -> None:
    corpus, queries = data
    exp_scores, exp_ids = brute_force(corpus, queries, k=7)
    index = ExactIndex(corpus, chunk_size=chunk_size, query_chunk_size=query_chunk_size)
    scores, ids = index.search(queries, 7)
    assert ids.shape == (6, 7) and ids.dtype == np.int64 and scores.dtype == np.float32
    assert ids.tolist() == exp_ids
    np.testing.assert_allclose(scores, exp_scores, rtol=1e-5, atol=1e-6)


def test_inner_product_without_normalisation(data: tuple[np.ndarray, np.ndarray]) -> None:
    corpus, queries = data
    corpus = corpus * np.random.default_rng(1).uniform(0.1, 5.0, size=(len(corpus), 1))  # varied norms
    exp_scores, exp_ids = brute_force(corpus, queries, k=4, cosine=False)
    scores, ids = build_index(corpus, "exact", normalize=False).search(queries, 4)
    assert ids.tolist() == exp_ids
    np.testing.assert_allclose(scores, exp_scores, rtol=1e-5, atol=1e-5)


def test_ties_by_lower_index_and_k_capped() -> None:
    corpus = np.array([[1, 0], [2, 0], [2, 0], [0, 1], [2, 0]], dtype=np.float32)  # exact float ties
    scores, ids = ExactIndex(corpus, normalize=False, chunk_size=2).search(np.array([[1.0, 0.0]]), 10)
    assert ids.tolist() == [[1, 2, 4, 0, 3]]  # k=10 capped at the 5 rows
    assert scores.tolist() == [[2.0, 2.0, 2.0, 1.0, 0.0]]


def test_bad_arguments(data: tuple[np.ndarray, np.ndarray]) -> None:
    corpus, queries = data
    index = build_index(corpus, "exact")
    with pytest.raises(ValueError, match="k must be"):
        index.search(queries, 0)
    with pytest.raises(ValueError, match=r"\(N, 8\)"):
        index.search(queries[:, :3], 2)
    with pytest.raises(ValueError, match="backend"):
        build_index(corpus, "annoy")
    with pytest.raises(ValueError, match="3 texts for 57"):
        build_index(corpus, "exact", texts=["a", "b", "c"])


def test_faiss_missing_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, data: tuple[np.ndarray, np.ndarray]
) -> None:
    monkeypatch.setitem(sys.modules, "faiss", None)  # makes `import faiss` raise ImportError
    with pytest.raises(ImportError, match="pip install faiss-cpu"):
        build_index(data[0], "faiss")
    monkeypatch.setattr(retrieval, "AUTO_FAISS_MIN", 10)
    assert isinstance(build_index(data[0], "auto"), ExactIndex)  # auto falls back to exact


class FakeIndexFlatIP:
    """Behaves like faiss.IndexFlatIP: add float32 rows, search returns (scores, ids) by inner product."""

    instances: list[FakeIndexFlatIP] = []

    def __init__(self, d: int) -> None:
        self.d = d
        self.rows = np.zeros((0, d), dtype=np.float32)
        FakeIndexFlatIP.instances.append(self)

    @property
    def ntotal(self) -> int:
        return len(self.rows)

    def add(self, x: np.ndarray) -> None:
        assert x.dtype == np.float32 and x.flags.c_contiguous and x.shape[1] == self.d
        self.rows = np.concatenate([self.rows, x])  # (ntotal, d)

    def search(self, x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        assert x.dtype == np.float32 and x.shape[1] == self.d
        scores = x @ self.rows.T  # (Q, ntotal)
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]  # (Q, k)
        return np.take_along_axis(scores, order, 1), order.astype(np.int64)


@pytest.fixture()
def fake_faiss(monkeypatch: pytest.MonkeyPatch) -> type[FakeIndexFlatIP]:
    module = types.ModuleType("faiss")
    module.IndexFlatIP = FakeIndexFlatIP  # type: ignore[attr-defined]
    FakeIndexFlatIP.instances = []
    monkeypatch.setitem(sys.modules, "faiss", module)
    return FakeIndexFlatIP


def test_faiss_adapter_with_fake_module(
    fake_faiss: type[FakeIndexFlatIP], data: tuple[np.ndarray, np.ndarray]
) -> None:
    corpus, queries = data
    index = build_index(corpus, "faiss")
    assert isinstance(index, FaissIndex) and len(fake_faiss.instances) == 1
    assert fake_faiss.instances[0].ntotal == len(corpus)
    exp_scores, exp_ids = brute_force(corpus, queries, k=5)
    scores, ids = index.search(queries, 5)
    assert ids.tolist() == exp_ids
    np.testing.assert_allclose(scores, exp_scores, rtol=1e-5, atol=1e-6)


def test_auto_picks_faiss_only_for_large_corpora(
    fake_faiss: type[FakeIndexFlatIP], monkeypatch: pytest.MonkeyPatch, data: tuple[np.ndarray, np.ndarray]
) -> None:
    monkeypatch.setattr(retrieval, "AUTO_FAISS_MIN", 56)
    assert isinstance(build_index(data[0], "auto"), FaissIndex)  # 57 rows > 56
    assert isinstance(build_index(data[0][:56], "auto"), ExactIndex)


def test_save_and_load_round_trip(tmp_path: Path, data: tuple[np.ndarray, np.ndarray]) -> None:
    corpus, queries = data
    texts = [f'row {i} "quoted"\nwith newline, é' for i in range(len(corpus))]
    index = build_index(corpus, "exact", texts=texts)
    folder = index.save(tmp_path / "idx")
    assert len((folder / "texts.jsonl").read_text(encoding="utf-8").splitlines()) == len(corpus)
    assert json.loads((folder / "index.json").read_text())["normalize"] is True
    loaded = load_index(folder, backend="exact")
    assert loaded.texts == texts
    exp_scores, exp_ids = brute_force(corpus, queries, k=3)
    scores, ids = loaded.search(queries, 3)
    assert ids.tolist() == exp_ids
    np.testing.assert_allclose(scores, exp_scores, rtol=1e-5, atol=1e-6)


def test_load_reports_bad_jsonl_line(tmp_path: Path, data: tuple[np.ndarray, np.ndarray]) -> None:
    folder = build_index(data[0][:2], "exact", texts=["a", "b"]).save(tmp_path / "idx")
    (folder / "texts.jsonl").write_text('"a"\n{"oops": 1}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"texts\.jsonl:2: expected a JSON string, got dict"):
        load_index(folder)
    with pytest.raises(FileNotFoundError, match="is not an index folder"):
        load_index(tmp_path)


def test_search_convenience_with_bag_of_words_encoder() -> None:
    vocab = ["cat", "dog", "car", "red", "a"]

    def encode(texts: list[str]) -> np.ndarray:
        return np.array([[t.split().count(w) for w in vocab] for t in texts], dtype=np.float64)

    corpus = ["a cat", "a dog", "red car", "a red cat"]
    hits = search(encode, corpus, ["cat", "red car"], k=2, backend="exact")
    assert [t for t, _ in hits[0]] == ["a cat", "a red cat"]
    assert hits[0][0][1] == pytest.approx(1 / math.sqrt(2), rel=1e-6)  # cos((0,...,1 cat), (cat + a))
    assert hits[0][1][1] == pytest.approx(1 / math.sqrt(3), rel=1e-6)
    assert hits[1][0] == ("red car", pytest.approx(1.0, rel=1e-6))
