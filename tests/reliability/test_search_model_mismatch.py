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
