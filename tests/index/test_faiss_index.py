"""sentcl index build: each type against a numpy cosine reference; saved, reopened (mmap), searched by the CLI."""

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
    return write_shards(tmp_path_factory.mktemp("shards"))


def exact_top(vectors: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    v = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    return np.argsort(-(q @ v.T), axis=1, kind="stable")[:, :k]  # (Q, k)


@pytest.mark.parametrize(
    ("kind", "params", "min_recall"),
    [
        ("flat", IndexParams(), 1.0),
        ("ivf", IndexParams(nlist=16, nprobe=16), 1.0),  # every cell probed: exact
        ("hnsw", IndexParams(hnsw_m=16, ef_search=200), 0.95),
        ("ivfpq", IndexParams(nlist=8, nprobe=8, pq_m=4), 0.3),
    ],
)
def test_index_types_against_exact_cosine(
    shards: tuple[Path, np.ndarray], tmp_path: Path, kind: str, params: IndexParams, min_recall: float
) -> None:
    folder, vectors = shards
    out = build_from_shards(folder, tmp_path / kind, kind, params)
    index = open_index(out)
    meta = json.loads((out / "index.json").read_text())
    assert (meta["type"], meta["dim"], meta["count"], meta["metric"]) == (kind, 16, 2000, "inner_product")
    assert meta["model"] == "fixed" and meta["pooler"] == "avg"
    queries = clustered(50, 16, 1)
    scores, ids = index.search(queries, 10)
    expected = exact_top(vectors, queries, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, expected, strict=True)])
    assert recall >= min_recall
    if kind != "ivfpq":  # the scores are cosines of the returned rows
        v = vectors[ids[0]]
        cos = v @ queries[0] / (np.linalg.norm(v, axis=1) * np.linalg.norm(queries[0]))
        np.testing.assert_allclose(scores[0], cos, atol=1e-4)
    assert index.texts(ids[0, :2]) == [f"sentence {ids[0, 0]}", f"sentence {ids[0, 1]}"]
    assert index.lines(ids[0, :1]) == [int(ids[0, 0]) + 1]
    assert not list(tmp_path.glob(".tmp-*"))


def test_wrong_dim_queries_name_the_index(shards: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    out = build_from_shards(shards[0], tmp_path / "flat", "flat")
    with pytest.raises(ValueError, match=r"16-dimensional .* 8-dimensional"):
        open_index(out).search(np.ones((1, 8), np.float32), 3)


def test_search_cli_uses_a_built_index(
    tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """encode --shard-size -> index build -> search --index: the hits equal an exact search of the same corpus."""
    lines = ["a man plays the guitar", "the woman is playing the piano", "a dog runs in the garden"]
    lines += ["the cat sits on the old car", "the stock price falls", "a bird sits in the green tree"]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    model = ["--model", str(tiny_bert), "--pooler", "avg"]
    assert (
        main(
            ["encode", *model, "--input", str(corpus), "--output", str(tmp_path / "emb"), "--shard-size", "4"]
        )
        == 0
    )
    assert (
        main(
            [
                "index",
                "build",
                "--embeddings",
                str(tmp_path / "emb"),
                "--type",
                "flat",
                "--output",
                str(tmp_path / "idx"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    query = ["--query", "a man is playing music", "-k", "3", "--json"]
    assert main(["search", *model, "--index", str(tmp_path / "idx"), *query]) == 0
    ann = json.loads(capsys.readouterr().out)
    assert main(["search", *model, "--corpus", str(corpus), *query]) == 0
    exact = json.loads(capsys.readouterr().out)
    assert [h["line"] for h in ann[0]["hits"]] == [h["line"] for h in exact[0]["hits"]]
    assert [h["text"] for h in ann[0]["hits"]] == [h["text"] for h in exact[0]["hits"]]
    for a, b in zip(ann[0]["hits"], exact[0]["hits"], strict=True):
        assert a["score"] == pytest.approx(b["score"], abs=1e-4)
    assert main(["index", "info", str(tmp_path / "idx")]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == len(lines)
