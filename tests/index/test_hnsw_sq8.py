"""hnsw with 8-bit scalar-quantised storage (``--hnsw-storage sq8``) against a numpy cosine reference."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from index_fixtures import clustered, write_shards

from sentcl.cli import main
from sentcl.index import open_index
from sentcl.index.faiss_build import build_from_shards
from sentcl.index.faiss_params import IndexParams


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    return write_shards(tmp_path_factory.mktemp("sq8"))


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_sq8_against_exact_cosine(shards: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    import faiss

    folder, vectors = shards
    params = IndexParams(hnsw_m=16, ef_search=200, hnsw_storage="sq8")  # trained on all 2000 rows
    out = build_from_shards(folder, tmp_path / "sq8", "hnsw", params)
    meta = json.loads((out / "index.json").read_text())
    assert meta["params"]["hnsw_storage"] == "sq8" and meta["params"]["train_size"] == 2000
    index = open_index(out)
    assert isinstance(index.index, faiss.IndexHNSWSQ)
    assert index.index.hnsw.efSearch == 200
    # D bytes a vector for the codes (16), not 4·D (64): the file is smaller than a flat-storage build
    flat = build_from_shards(folder, tmp_path / "flat", "hnsw", IndexParams(hnsw_m=16))
    assert (out / "index.faiss").stat().st_size < (flat / "index.faiss").stat().st_size
    queries = clustered(50, 16, 1)
    scores, ids = index.search(queries, 10)
    cos = unit(queries) @ unit(vectors).T  # (Q, N)
    expected = np.argsort(-cos, axis=1, kind="stable")[:, :10]  # (Q, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, expected, strict=True)])
    assert recall >= 0.9
    # scores are cosines up to the 8-bit quantisation of the stored rows: each dimension is off by at most
    # one step, range_d / 255, with range_d the (min, max) span of the training rows in that dimension
    step = np.ptp(unit(vectors), axis=0) / 255  # (D,)
    bound = np.abs(unit(queries)) @ step  # (Q,)
    error = np.abs(scores - np.take_along_axis(cos, ids, axis=1))  # (Q, 10)
    assert (error <= bound[:, None] + 1e-5).all()
    assert error.max() > 0  # the codes are quantised, not the float rows


def test_sq8_from_the_cli(shards: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    folder, _ = shards
    out = tmp_path / "cli"
    argv = ["index", "build", "--embeddings", str(folder), "--type", "hnsw", "--output", str(out)]
    assert main(argv + ["--hnsw-storage", "sq8", "--hnsw-m", "8", "--train-size", "700"]) == 0
    meta = json.loads((out / "index.json").read_text())
    assert meta["params"]["hnsw_storage"] == "sq8" and meta["params"]["hnsw_m"] == 8
    assert meta["params"]["train_size"] == 700


def test_sq8_default_sample() -> None:
    resolved = IndexParams(hnsw_storage="sq8").resolved("hnsw", 16, 1_000_000)
    assert resolved["train_size"] == 65_536
    assert IndexParams(hnsw_storage="sq8").resolved("hnsw", 16, 100)["train_size"] == 100  # capped at N
    assert "train_size" not in IndexParams().resolved("hnsw", 16, 100)  # flat storage trains nothing


def test_unknown_storage_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown hnsw storage 'pq'; valid: flat, sq8"):
        IndexParams(hnsw_storage="pq").resolved("hnsw", 16, 100)
