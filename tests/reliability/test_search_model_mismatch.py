"""A search whose encoder differs from the index's is refused, by ``sentcl search`` and by ``sentcl serve``.

The CLI cases run the real CLI in-process on tiny random BERTs (harness ``Case``): an index built with one model
and pooler is searched with another pooler, another model of the same width, and the same model without
``--pooler`` (its own pooler must not be silently replaced by the index's). The service case starts the real
``sentcl serve`` process on a `sentcl index build` folder and asks it over HTTP.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from harness import Case, parametrize, run_case

from sentcl.cli import main
from tests.conftest import build_tiny_bert

pytest.importorskip("faiss")
ENV: dict[str, Path] = {}
LINES = [
    f"{w} number {i}"
    for i, w in enumerate("dog cat guitar river bank piano city song ball tree".split() * 30)
]


@pytest.fixture(autouse=True)
def _env(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    ENV["model"] = tiny_bert
    if "other" not in ENV:  # another 32-wide random BERT: same dimension, other embeddings
        ENV["other"] = build_tiny_bert(tmp_path_factory.mktemp("other_bert"), seed=1)


def built_index(folder: Path, kind: str = "flat") -> Path:
    """LINES encoded with the tiny BERT and pooler avg (shards of 100), and a `kind` index over them."""
    (folder / "corpus.txt").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    argv = ["encode", "--model", str(ENV["model"]), "--pooler", "avg", "--input", str(folder / "corpus.txt")]
    assert main([*argv, "--output", str(folder / "emb"), "--shard-size", "100"]) == 0
    argv = ["index", "build", "--embeddings", str(folder / "emb"), "--type", kind]
    assert main([*argv, "--output", str(folder / "idx")]) == 0
    return folder / "idx"


def search(model: str, *extra: str) -> object:
    def setup(folder: Path) -> list[str]:
        index = built_index(folder)
        return [
            "search",
            "--model",
            str(ENV[model]),
            "--index",
            str(index),
            "--query",
            "a dog",
            "-k",
            "3",
            *extra,
        ]

    return setup


def hits_of_own_pooler(folder: Path, printed: str) -> None:
    """--allow-model-mismatch: the hits are the model's OWN pooler's (cls), not the index's avg."""
    from sentcl.modeling.open import load_encoder

    hits = json.JSONDecoder().raw_decode(printed[printed.index("[") :])[0][0]["hits"]
    own = load_encoder(str(ENV["model"]))
    assert own.pooler != "avg"
    emb = np.concatenate([np.load(p) for p in sorted((folder / "emb").glob("shard-*[0-9].npy"))])
    q = np.asarray(own.encode(["a dog"]))[0]
    cos = emb @ q / np.linalg.norm(emb, axis=1) / np.linalg.norm(q)
    assert [h["score"] for h in hits] == pytest.approx(sorted(cos, reverse=True)[:3], abs=1e-5)


CASES = [
    Case(
        "I07",
        search("model", "--pooler", "cls"),
        r"search: error: .*pooler: the index's is 'avg', the search's 'cls'",
    ),
    Case(
        "I09-model",
        search("other", "--pooler", "avg"),
        r"error: .*model: the index was encoded with '[^']*tiny_bert[^']*' \(.*\), the search uses '[^']*other_bert",
    ),
    Case(
        "I09-own-pooler",
        search("model"),
        r"error: .*pooler: the index's is 'avg', the search's 'cls'.*--allow-model-mismatch",
    ),
    Case("I09-allowed", search("model", "--allow-model-mismatch", "--json"), None, check=hits_of_own_pooler),
]


@parametrize(CASES)
def test_search_model_mismatch_case(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_case(case, tmp_path, capsys)


@pytest.mark.slow
def test_S53_serve_a_built_index(tmp_path: Path) -> None:
    """`sentcl serve MODEL --index DIR` on an ivf folder of `sentcl index build`: a real process, real HTTP."""
    index = built_index(tmp_path, "ivf")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [sys.executable, "-m", "sentcl.cli", "serve", str(ENV["model"]), "--pooler", "avg"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [*argv, "--index", str(index), "--port", str(port)], env=env, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]  # type: ignore[union-attr]
            try:
                info = httpx.get(f"http://127.0.0.1:{port}/info", timeout=5).json()
                if info["ready"]:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the service did not start in 120 s"
            time.sleep(0.5)
        meta = json.loads((index / "index.json").read_text())
        assert info["index"]["type"] == "ivf" and info["index"]["size"] == len(LINES)
        assert info["index"]["setting"] == meta["tuning"]["setting"]
        assert info["index"]["recall_at_10"] == meta["tuning"]["recall_at_10"]
        hits = httpx.post(
            f"http://127.0.0.1:{port}/search", json={"query": LINES[42], "k": 3}, timeout=30
        ).json()
        assert hits[0]["text"] == LINES[42] and all(h["text"] == LINES[h["id"]] for h in hits)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def truncated_index(folder: Path, dim: int) -> Path:
    """LINES encoded with ``--truncate-dim dim`` (pooler avg) and a flat index over them: the index records
    its truncation, which search and serve then apply."""
    (folder / "corpus.txt").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    argv = ["encode", "--model", str(ENV["model"]), "--pooler", "avg", "--truncate-dim", str(dim)]
    argv += ["--input", str(folder / "corpus.txt"), "--output", str(folder / "emb"), "--shard-size", "100"]
    assert main(argv) == 0
    build = ["index", "build", "--embeddings", str(folder / "emb"), "--type", "flat"]
    assert main([*build, "--output", str(folder / "idx")]) == 0
    return folder / "idx"


def reference_lines(folder: Path, query: str, dim: int, k: int) -> list[int]:
    """The corpus lines (1-based) nearest ``query``: the full avg embedding's first ``dim`` coordinates, numpy."""
    from sentcl.modeling.open import load_encoder

    full = load_encoder(str(ENV["model"]), pooler="avg")
    q = np.asarray(full.encode([query]))[0, :dim]  # (dim,)
    emb = np.asarray(full.encode(LINES))[:, :dim]  # (N, dim)
    cos = emb @ q / np.linalg.norm(emb, axis=1) / np.linalg.norm(q)
    return [int(i) + 1 for i in np.argsort(-cos, kind="stable")[:k]]


@pytest.mark.parametrize("dim", [8, 16])
def test_an_index_of_truncated_vectors_is_searched_with_its_own_truncation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, dim: int
) -> None:
    from fastapi.testclient import TestClient

    import sentcl.cli.serve as serve_cli

    index = truncated_index(tmp_path, dim)
    capsys.readouterr()
    argv = ["search", "--model", str(ENV["model"]), "--pooler", "avg", "--index", str(index)]
    assert main([*argv, "--query", "a dog", "-k", "3", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)[0]["hits"]
    assert [h["line"] for h in hits] == reference_lines(tmp_path, "a dog", dim, 3)

    seen: dict[str, object] = {}
    monkeypatch.setattr(serve_cli, "serve_on", lambda app, sock, config: seen.update(app=app))
    monkeypatch.delenv("SENTCL_API_KEY", raising=False)
    serve = ["serve", str(ENV["model"]), "--pooler", "avg", "--index", str(index), "--port", "0"]
    assert main([*serve, "--keep-malloc-threshold"]) == 0  # no --truncate-dim: the index's own
    with TestClient(seen["app"], base_url="http://localhost") as client:
        served = client.post("/search", json={"query": "a dog", "k": 3}).json()
    assert [h["text"] for h in served] == [h["text"] for h in hits]
    other = 4 if dim != 4 else 2
    assert main([*serve, "--keep-malloc-threshold", "--truncate-dim", str(other)]) == 2
    err = capsys.readouterr().err
    assert f"the index was encoded with --truncate-dim {dim}: pass --truncate-dim {dim}" in err
