"""The store on object storage: a real S3-compatible server (moto's ``moto_server``) started here on 127.0.0.1,
the AWS variables set for these tests only; build, search and serve through ``s3://``, checked against the same
build on a local folder; a missing bucket is one clear line."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.data import write_corpus
from helpers.shards import encode_argv

pytest.importorskip("lancedb")
boto3 = pytest.importorskip("boto3")

from sentcl.cli import main  # noqa: E402
from sentcl.index import open_index  # noqa: E402
from sentcl.index.store import StoreError  # noqa: E402
from sentcl.index.store_build import build_store  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def s3() -> Iterator[str]:
    """A moto S3 server on a free port of 127.0.0.1; its endpoint URL."""
    exe = shutil.which("moto_server") or str(Path(sys.executable).parent / "moto_server")
    port = free_port()
    proc = subprocess.Popen(
        [exe, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture()
def aws(s3: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    for name, value in {
        "AWS_ENDPOINT_URL": s3,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=s3, region_name="us-east-1")
    client.create_bucket(Bucket="vectors")
    return client


def test_store_on_s3_answers_as_the_local_one(
    aws: Any, tiny_bert: Path, tiny_encoder: Any, tmp_path: Path
) -> None:
    from fastapi.testclient import TestClient

    from sentcl.serve.app import create_app
    from sentcl.serve.index import load_search_index

    corpus = write_corpus(tmp_path / "corpus.txt", 50, seed=3)
    assert main(encode_argv(tiny_bert, corpus, tmp_path / "emb", 20) + ["--pooler", "avg"]) == 0
    uri = "s3://vectors/sentcl/store"
    assert main(["index", "build", "--embeddings", str(tmp_path / "emb"), "--store", uri]) == 0
    listed = aws.list_objects_v2(Bucket="vectors", Prefix="sentcl/store/vectors.lance/")
    assert listed["KeyCount"] > 0  # the data really lives in the bucket
    local = build_store(tmp_path / "emb", tmp_path / "local")
    remote = open_index(uri)
    q = np.asarray(tiny_encoder.encode(["the dog runs", "a man"], normalize=True))
    (s_remote, i_remote), (s_local, i_local) = remote.search(q, 5), local.search(q, 5)
    texts = corpus.read_text(encoding="utf-8").splitlines()
    exact = np.argsort(-(q @ np.asarray(tiny_encoder.encode(texts, normalize=True)).T), axis=1)[
        :, :5
    ]  # (2, 5)
    assert (i_remote == exact).all() and (i_remote == i_local).all() and np.allclose(s_remote, s_local)
    assert remote.texts(i_remote[0]) == [texts[i] for i in exact[0]]
    app = create_app(tiny_encoder, index=load_search_index(uri, tiny_encoder, str(tiny_bert)))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        hits = client.post("/search", json={"query": "the dog runs", "k": 5}).json()
        assert [h["id"] for h in hits] == list(exact[0])
        assert client.get("/info").json()["index"]["backend"] == "lancedb"


def test_a_missing_bucket_is_one_line(aws: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(StoreError) as err:
        open_index("s3://no-such-bucket/store")
    assert "\n" not in str(err.value) and "no-such-bucket" in str(err.value)
    argv = ["search", "--model", "unused", "--index", "s3://no-such-bucket/store", "--query", "a"]
    assert main(argv) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
