"""`sentcl serve --index DIR` with a folder built by `sentcl index build` through a real uvicorn:
/search hits' texts are the corpus lines read back through the shards' offsets, ranked as an exact numpy
search over the shards ranks them; /info reports type, size, tuned setting and measured recall."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from serve_helpers import running_server, unit

from sentcl.cli import main
from sentcl.serve.app import create_app
from sentcl.serve.index import load_search_index

pytest.importorskip("faiss")
WORDS = "dog cat man woman child guitar piano river city garden bank price market ball song".split()


@pytest.fixture(scope="module")
def ann_dir(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """3,000 lines encoded as shards of 1,000 and an ivf index over them, both by the CLI."""
    folder = tmp_path_factory.mktemp("ann_serve")
    rng = np.random.default_rng(0)
    lines = [" ".join(rng.choice(WORDS, size=4)) + f" {i}" for i in range(3000)]
    (folder / "corpus.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    shards = folder / "emb"
    encode = ["encode", "--model", str(tiny_bert), "--pooler", "avg", "--input", str(folder / "corpus.txt")]
    assert main([*encode, "--output", str(shards), "--shard-size", "1000"]) == 0
    build = ["index", "build", "--embeddings", str(shards), "--type", "ivf", "--output", str(folder / "ivf")]
    assert main(build) == 0
    return folder / "ivf", lines


def test_serve_searches_a_built_index(
    tiny_encoder: Any, tiny_bert: Path, ann_dir: tuple[Path, list[str]]
) -> None:
    index_dir, lines = ann_dir
    meta = json.loads((index_dir / "index.json").read_text())
    vectors = unit(
        np.concatenate([np.load(p) for p in sorted((index_dir.parent / "emb").glob("shard-*[0-9].npy"))])
    )
    index = load_search_index(index_dir, tiny_encoder, str(tiny_bert))
    app = create_app(tiny_encoder, model_name="tiny-bert", index=index)
    queries = [lines[7], "a dog and a guitar", lines[2500]]
    exact = np.argsort(-(unit(np.asarray(tiny_encoder.encode(queries))) @ vectors.T), axis=1)[:, :5]  # (3, 5)
    with running_server(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        info = http.get("/info").json()["index"]
        assert info["type"] == "ivf" and info["size"] == 3000 == len(lines)
        assert info["setting"] == {"nprobe": meta["params"]["nprobe"]} == meta["tuning"]["setting"]
        assert info["recall_at_10"] == meta["tuning"]["recall_at_10"] >= 0.95
        hits = http.post("/search", json={"queries": queries, "k": 5})
        assert hits.status_code == 200, hits.text
        found = hits.json()
    for q, rows in enumerate(found):
        assert [h["text"] for h in rows] == [lines[h["id"]] for h in rows]  # read back through the offsets
        assert len(set(h["id"] for h in rows) & set(exact[q].tolist())) >= 4
    assert found[0][0]["text"] == lines[7] and found[2][0]["text"] == lines[2500]


def test_serve_refuses_another_pooler_and_names_a_wrong_folder(
    tiny_bert: Path, ann_dir: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index_dir, _ = ann_dir
    argv = ["serve", str(tiny_bert), "--port", "0"]
    assert main([*argv, "--index", str(index_dir), "--pooler", "cls"]) == 2
    err = capsys.readouterr().err
    assert "sentcl serve: error:" in err and "pooler: the index's is 'avg', the search's 'cls'" in err
    assert "--allow-model-mismatch" in err
    (tmp_path / "other").mkdir()
    assert main([*argv, "--index", str(tmp_path / "other")]) == 2
    assert (
        "is not an index folder (sentcl index build or sentcl search --index writes one)"
        in capsys.readouterr().err
    )


def test_a_corpus_re_encoded_under_the_service_is_said_stale_until_reloaded(
    tiny_encoder: Any, tiny_bert: Path, tmp_path: Path
) -> None:
    """The sweep's steps with the real CLI: serve an index, edit its corpus (lines reversed) and encode it again
    into the same shards, then rebuild the index with --overwrite. Between, /search says plainly that the index
    is stale and what to do (409, never a 500 or another corpus's text); /index/reload after the rebuild
    serves the new corpus, checked against the lines themselves."""
    from fastapi.testclient import TestClient

    lines = [f"{w} number {i}" for i, w in enumerate(WORDS * 20)]
    corpus = tmp_path / "in.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    encode = ["encode", "--model", str(tiny_bert), "--pooler", "avg", "--input", str(corpus)]
    encode += ["--output", str(tmp_path / "sh"), "--shard-size", "100"]
    build = [
        "index",
        "build",
        "--embeddings",
        str(tmp_path / "sh"),
        "--type",
        "flat",
        "--output",
        str(tmp_path / "idx"),
    ]
    assert main(encode) == 0 and main(build) == 0
    app = create_app(
        tiny_encoder,
        model_name="tiny",
        index=load_search_index(tmp_path / "idx", tiny_encoder, str(tiny_bert)),
    )
    ask = {"query": lines[5], "k": 3}
    with TestClient(app, base_url="http://localhost") as client:
        before = client.post("/search", json=ask).json()
        assert before[0]["text"] == lines[5]
        corpus.write_text("\n".join(reversed(lines)) + "\n", encoding="utf-8")  # edited in place, as tac > in
        steps = [lambda: None, lambda: main([*encode, "--overwrite"]), lambda: main([*build, "--overwrite"])]
        for step in steps:  # edited; re-encoded into the same shards; the index rebuilt
            step()
            stale = client.post("/search", json=ask)
            assert stale.status_code == 409, stale.text
            body = stale.json()
            assert body["error_type"] == "index_stale" and "POST /index/reload" in body["error"]
        assert client.post("/index/reload").status_code == 200
        after = client.post("/search", json=ask).json()
    new_lines = list(reversed(lines))
    assert after[0]["text"] == lines[5] and all(h["text"] == new_lines[h["id"]] for h in after)
