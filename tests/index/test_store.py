"""The vector store (``sentcl index build --store``, LanceDB) end to end on a local folder: the real sentcl
encode, build, search, serve and mine, each checked against exact cosine search done here with numpy; versions
(a service keeps its version until it reloads, two services answer alike, a removed version is a clear error),
another model refused, two writers, a build killed mid-way."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.data import write_corpus
from helpers.shards import encode_argv
from helpers.tiny_bert import build_tiny_bert

pytest.importorskip("lancedb")

from sentcl.cli import main  # noqa: E402
from sentcl.index.store import StoreError, open_store  # noqa: E402
from sentcl.index.store_build import build_store  # noqa: E402


def exact_top(model: Any, corpus: list[str], queries: list[str], k: int) -> list[list[int]]:
    """Row ids of the exact top-k by cosine (numpy over the model's embeddings)."""
    c = np.asarray(model.encode(corpus, normalize=True))  # (N, D)
    q = np.asarray(model.encode(queries, normalize=True))  # (Q, D)
    return [list(np.argsort(-row, kind="stable")[:k]) for row in q @ c.T]  # (Q, N) cosines


@pytest.fixture(scope="module")
def built(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A 60-line corpus encoded to shards and written to a store by the CLI."""
    root = tmp_path_factory.mktemp("store")
    corpus = write_corpus(root / "corpus.txt", 60)
    assert main(encode_argv(tiny_bert, corpus, root / "emb", 25) + ["--pooler", "avg"]) == 0
    assert main(["index", "build", "--embeddings", str(root / "emb"), "--store", str(root / "store")]) == 0
    return {"root": root, "corpus": corpus, "store": root / "store", "emb": root / "emb"}


def test_search_equals_exact_search(
    built: dict[str, Any], tiny_encoder: Any, tiny_bert: Path, capsys
) -> None:
    texts = built["corpus"].read_text(encoding="utf-8").splitlines()
    queries = texts[:3] + ["the dog runs"]
    capsys.readouterr()
    argv = ["search", "--model", str(tiny_bert), "--pooler", "avg", "--index", str(built["store"]), "-k", "5"]
    assert main(argv + [a for q in queries for a in ("--query", q)] + ["--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    want = exact_top(tiny_encoder, texts, queries, 5)
    # recall@5 of 1.0: one IVF cell at 60 rows, so the store's search is exhaustive
    assert [[h["line"] - 1 for h in row["hits"]] for row in hits] == [[int(i) for i in w] for w in want]
    assert [h["text"] for h in hits[0]["hits"]] == [texts[int(i)] for i in want[0]]
    store = open_store(built["store"])
    assert store.meta["model_sha256"] and store.meta["tuning"]["recall_at_10"] == 1.0


def test_another_model_is_refused_in_one_line(built: dict[str, Any], tmp_path: Path, capsys) -> None:
    other = build_tiny_bert(tmp_path / "other", seed=1)
    argv = [
        "search",
        "--model",
        str(other),
        "--pooler",
        "avg",
        "--index",
        str(built["store"]),
        "--query",
        "a",
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "another encoder" in err[0] and "model:" in err[0]


def test_missing_and_unpublished_stores_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        open_store(tmp_path / "nothing")
    (tmp_path / "empty" / "vectors.lance").mkdir(parents=True)
    with pytest.raises(StoreError, match="no store table"):
        open_store(tmp_path / "empty")


def serve(store: Path, encoder: Any, tiny_bert: Path) -> Any:
    from fastapi.testclient import TestClient

    from sentcl.serve.app import create_app
    from sentcl.serve.index import load_search_index

    index = load_search_index(store, encoder, str(tiny_bert))
    return TestClient(create_app(encoder, index=index), base_url="http://127.0.0.1")


def test_served_versions_reload_and_removal(
    built: dict[str, Any], tiny_encoder: Any, tiny_bert: Path
) -> None:
    root = built["root"]
    store = root / "served"
    build_store(built["emb"], store)
    one, two = serve(store, tiny_encoder, tiny_bert), serve(store, tiny_encoder, tiny_bert)
    ask = {"query": "the dog runs", "k": 4}
    first = one.post("/search", json=ask).json()
    assert first == two.post("/search", json=ask).json()  # two services on one store answer alike
    texts = built["corpus"].read_text(encoding="utf-8").splitlines()
    assert [h["id"] for h in first] == [
        int(i) for i in exact_top(tiny_encoder, texts, ["the dog runs"], 4)[0]
    ]
    # a rebuild from another corpus is a new version: both services keep theirs until told to reload
    corpus2 = write_corpus(root / "corpus2.txt", 45, seed=5)
    assert main(encode_argv(tiny_bert, corpus2, root / "emb2", 20) + ["--pooler", "avg"]) == 0
    rebuilt = build_store(root / "emb2", store)
    assert one.post("/search", json=ask).json() == first
    reloaded = one.post("/index/reload").json()
    assert reloaded["index"]["version"] == rebuilt.version > reloaded["previous"]["version"]
    texts2 = corpus2.read_text(encoding="utf-8").splitlines()
    now = one.post("/search", json=ask).json()
    assert [h["text"] for h in now] == [
        texts2[int(i)] for i in exact_top(tiny_encoder, texts2, [ask["query"]], 4)[0]
    ]
    assert two.post("/search", json=ask).json() == first
    # the old version removed under the second service: a 503 naming it, and the service still runs
    rebuilt.table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
    gone = two.post("/search", json=ask)
    assert gone.status_code == 503 and "can no longer be read" in gone.json()["error"]
    assert two.get("/health").status_code == 200
    assert two.post("/index/reload").status_code == 200 and two.post("/search", json=ask).json() == now


def test_two_writers_one_wins_cleanly(built: dict[str, Any]) -> None:
    store = built["root"] / "raced"
    outcomes: list[Any] = []
    gate = threading.Barrier(2)

    def write() -> None:
        gate.wait()
        try:
            outcomes.append(build_store(built["emb"], store).meta["build_id"])
        except StoreError as err:
            outcomes.append(err)

    threads = [threading.Thread(target=write) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [o for o in outcomes if isinstance(o, str)]
    lost = [o for o in outcomes if isinstance(o, StoreError)]
    assert won, outcomes  # at least one wins; a loser is refused in one line
    assert all("\n" not in str(e) and "published" in str(e) for e in lost), [str(e) for e in lost]
    published = open_store(store)
    assert published.meta["build_id"] in won and published.table.count_rows() == 60


def test_a_killed_build_leaves_the_published_version(built: dict[str, Any], tmp_path: Path) -> None:
    store = built["root"] / "killed"
    before = build_store(built["emb"], store)
    code = (
        "import sys; from sentcl.index.store_build import build_store; "
        f"build_store({str(built['emb'])!r}, {str(store)!r})"
    )
    versions = store / "vectors.lance" / "_versions"
    count = len(list(versions.iterdir()))
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    )
    try:
        deadline = time.monotonic() + 120
        while len(list(versions.iterdir())) == count and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # until the new data version is committed, before its index and publication
        proc.kill()
    finally:
        proc.wait()
    after = open_store(store)
    assert after.version == before.version and after.meta["build_id"] == before.meta["build_id"]
    assert after.search(before.vectors([0]), 1)[1][0, 0] == 0


def test_mine_from_the_store_equals_mining_the_same_corpus(
    built: dict[str, Any], tiny_bert: Path, tmp_path: Path
) -> None:
    texts = built["corpus"].read_text(encoding="utf-8").splitlines()
    pairs = tmp_path / "pairs.csv"
    with open(pairs, "w", newline="", encoding="utf-8") as handle:
        w = csv.writer(handle)
        w.writerow(["anchor", "positive"])
        w.writerows([(texts[i], texts[i + 1]) for i in range(0, 20, 2)])
    rest = tmp_path / "rest.txt"
    rest.write_text("\n".join(texts) + "\n", encoding="utf-8")
    common = [
        "mine",
        "--model",
        str(tiny_bert),
        "--pooler",
        "avg",
        "--pairs",
        str(pairs),
        "--num-negatives",
        "2",
    ]
    assert main(common + ["--index", str(built["store"]), "--output", str(tmp_path / "store.csv")]) == 0
    assert main(common + ["--corpus", str(rest), "--output", str(tmp_path / "exact.csv")]) == 0
    read = lambda p: (tmp_path / p).read_text(encoding="utf-8")  # noqa: E731
    assert read("store.csv") == read("exact.csv") and read("store.csv").count("\n") == 21


def test_an_hnsw_store_finds_the_exact_neighbours_with_exact_scores(
    built: dict[str, Any], tiny_encoder: Any, capsys
) -> None:
    store_dir = built["root"] / "store-hnsw"
    argv = ["index", "build", "--embeddings", str(built["emb"]), "--store", str(store_dir)]
    assert main([*argv, "--type", "hnsw"]) == 0
    assert "search setting ef_search" in capsys.readouterr().out
    store = open_store(store_dir)
    assert store.meta["index_type"] == "IVF_HNSW_SQ" and store.meta["params"]["nlist"] == 1
    assert "ef_search" in store.setting() and store.meta["tuning"]["reached"]
    texts = built["corpus"].read_text(encoding="utf-8").splitlines()
    corpus = np.asarray(tiny_encoder.encode(texts, normalize=True))  # (60, D)
    queries = corpus[:8] + 0.05  # (8, D) near corpus rows, not on them
    scores, ids = store.search(queries, 5)
    unit = queries / np.linalg.norm(queries, axis=1, keepdims=True)  # (8, D)
    exact = np.argsort(-(unit @ corpus.T), axis=1, kind="stable")[:, :5]  # (8, 5)
    hits = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(ids, exact, strict=True)])
    assert hits >= 0.95, (ids, exact)
    # the scores are the exact cosines of the rows found (re-scored from the stored float vectors)
    np.testing.assert_allclose(scores, np.take_along_axis(unit @ corpus.T, ids, axis=1), atol=1e-5)
    with pytest.raises(ValueError, match="--type ivfpq: a store holds an index of type ivf or hnsw"):
        build_store(built["emb"], built["root"] / "store-pq", kind="ivfpq")
    assert not (built["root"] / "store-pq").exists()
