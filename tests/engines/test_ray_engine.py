"""``sentcl encode --engine ray`` and ``embed_dataset`` on a real local Ray (2 CPUs, a small object store, no
dashboard; shut down at the end): the vectors are the in-process encode's, the shard folder is the one the
rest of sentcl reads, a partial encode is finished (only the missing shards), another encode's folder is
refused, and an address where no Ray answers is one line, quickly. Object storage: a real moto S3 server on
127.0.0.1, started here."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers.data import write_corpus
from helpers.shards import encode_argv

from sentcl.cli import main
from sentcl.config import ConfigError, TrainConfig, load_config
from sentcl.config.teacher import TeacherConfig
from sentcl.data.shards import ENCODE_CHUNK, ShardSet
from sentcl.engines import ModelSpec
from sentcl.engines.ray import MIN_ROWS_PER_CALL, block_rows
from sentcl.methods.teacher_cache import teacher_vectors
from sentcl.methods.teacher_engine import TeacherEngine

ray = pytest.importorskip("ray")
SHARD = 16


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(
        num_cpus=2,
        object_store_memory=80 * 1024**2,
        include_dashboard=False,
        log_to_driver=False,
        _node_ip_address="127.0.0.1",  # loopback only
    )
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = write_corpus(tmp_path_factory.mktemp("ray_corpus") / "c.txt", 50)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("\n")  # an empty line is a row too
    return path


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, tiny_bert: Path, corpus: Path) -> np.ndarray:
    """The in-process encode of the corpus (``sentcl encode`` without --engine): (51, D)."""
    out = tmp_path_factory.mktemp("ref") / "ref.npy"
    assert main(["encode", "--model", str(tiny_bert), "--input", str(corpus), "--output", str(out)]) == 0
    return np.load(out)


def vectors(folder: Path) -> np.ndarray:
    shards = ShardSet.open(folder)
    assert shards.damaged() == {}
    return np.concatenate([np.asarray(a) for _, a in shards.iter_arrays()])  # (rows, D)


def test_a_block_is_the_in_process_chunk_unless_an_actor_would_idle() -> None:
    """A large input goes in blocks of the in-process encode's chunk (its length sort: the same padding); a
    smaller one is split so that every actor of the pool gets a block, down to the fewest rows a block."""
    assert block_rows(50_000, 2) == ENCODE_CHUNK
    assert block_rows(2 * ENCODE_CHUNK, 2) == ENCODE_CHUNK
    assert block_rows(3_000, 2) == 1_500 and block_rows(3_001, 2) == 1_501  # two blocks: one an actor
    assert block_rows(1_000, 8) == 125
    assert block_rows(10, 2) == MIN_ROWS_PER_CALL  # a tiny input is one block
    assert block_rows(0, 0) == MIN_ROWS_PER_CALL


@pytest.mark.slow
def test_ray_shards_equal_the_in_process_encode(
    local_ray: None, tiny_bert: Path, corpus: Path, reference: np.ndarray, tmp_path: Path
) -> None:
    ray_out, local_out = tmp_path / "ray", tmp_path / "local"
    assert main([*encode_argv(tiny_bert, corpus, ray_out, SHARD), "--engine", "ray"]) == 0
    assert main(encode_argv(tiny_bert, corpus, local_out, SHARD)) == 0
    got = vectors(ray_out)
    assert got.shape == reference.shape == (51, 32)
    np.testing.assert_allclose(got, reference, rtol=0, atol=1e-6)
    ray_manifest = json.loads((ray_out / "manifest.json").read_text())
    local_manifest = json.loads((local_out / "manifest.json").read_text())
    for key in ("format", "model_sha256", "pooler", "dim", "rows", "complete", "input_fingerprint"):
        assert ray_manifest[key] == local_manifest[key], key
    for ray_rec, local_rec in zip(ray_manifest["shards"], local_manifest["shards"], strict=True):
        for key in ("start_line", "end_line", "rows", "offsets_sha256", "settings_sha256", "input_sha256"):
            assert ray_rec[key] == local_rec[key], key
    lines = corpus.read_text(encoding="utf-8").splitlines()
    assert ShardSet.open(ray_out).texts([0, 17, 50]) == [lines[0], lines[17], ""]


@pytest.mark.slow
def test_a_partial_encode_is_finished_and_another_encode_refused(
    local_ray: None,
    tiny_bert: Path,
    corpus: Path,
    reference: np.ndarray,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "shards"
    argv = [*encode_argv(tiny_bert, corpus, out, SHARD), "--engine", "ray"]
    assert main(argv) == 0
    # what a run killed in shard 2 leaves: shards 0-1 finished, shard 2's vectors without their record, no
    # shard 3, a manifest that says so
    (out / "shard-00002.json").unlink()
    for name in ("shard-00003.npy", "shard-00003.offsets.npy", "shard-00003.json"):
        (out / name).unlink()
    manifest = json.loads((out / "manifest.json").read_text())
    manifest.update(shards=manifest["shards"][:2], rows=2 * SHARD, complete=False)
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="not finished"):
        ShardSet.open(out)
    kept = {n: (out / n).stat().st_mtime_ns for n in ("shard-00000.npy", "shard-00001.npy")}
    assert main(argv) == 0
    assert {n: (out / n).stat().st_mtime_ns for n in kept} == kept  # finished shards are not redone
    assert json.loads((out / "shard-00002.json").read_text())["engine"] == "ray"
    np.testing.assert_allclose(vectors(out), reference, rtol=0, atol=1e-6)

    capsys.readouterr()
    assert main([*argv, "--normalize"]) == 2  # another encode's settings into the same folder
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds shards of another encode" in err[0] and "normalize" in err[0], err


@pytest.mark.slow
def test_embed_dataset_adds_the_embedding_column(
    local_ray: None, tiny_bert: Path, corpus: Path, reference: np.ndarray
) -> None:
    from sentcl.engines.ray import embed_dataset

    lines = corpus.read_text(encoding="utf-8").splitlines()
    ds = ray.data.from_items([{"id": i, "text": t} for i, t in enumerate(lines)])
    rows = sorted(
        embed_dataset(ds, ModelSpec(str(tiny_bert)), rows_per_call=8).take_all(), key=lambda r: r["id"]
    )
    assert [r["text"] for r in rows] == lines
    np.testing.assert_allclose(np.stack([r["embedding"] for r in rows]), reference, rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="no column 'sentence'"):
        embed_dataset(ds, str(tiny_bert), text_column="sentence")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_ray_address_is_one_line_quickly(
    tiny_bert: Path, corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start = time.monotonic()
    argv = [*encode_argv(tiny_bert, corpus, tmp_path / "o", SHARD), "--engine", "ray"]
    assert main([*argv, "--ray-address", f"127.0.0.1:{free_port()}"]) == 2
    assert time.monotonic() - start < 15
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no Ray cluster answers at 127.0.0.1:" in err[0], err
    assert not (tmp_path / "o").exists()
    assert main([*encode_argv(tiny_bert, corpus, tmp_path / "o", SHARD), "--ray-address", "h:1"]) == 2
    assert "--ray-address h:1 needs --engine ray" in capsys.readouterr().err


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A moto S3 server on 127.0.0.1; yields its endpoint URL."""
    port = free_port()
    log = open(tmp_path_factory.mktemp("moto") / "moto.log", "wb")  # noqa: SIM115  closed below
    server = subprocess.Popen(["moto_server", "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline and server.poll() is None, "moto_server did not start"
            time.sleep(0.2)
    yield f"http://127.0.0.1:{port}"
    server.terminate()
    server.wait(timeout=10)
    log.close()


@pytest.fixture()
def bucket(s3: str, corpus: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    import boto3
    import pyarrow as pa
    import pyarrow.parquet as pq

    for name, value in (("AWS_ENDPOINT_URL", s3), ("AWS_ACCESS_KEY_ID", "k"), ("AWS_SECRET_ACCESS_KEY", "s"),
                        ("AWS_REGION", "us-east-1")):  # fmt: skip
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=s3, region_name="us-east-1")
    name = f"corpus-{os.getpid()}-{time.monotonic_ns()}"
    client.create_bucket(Bucket=name)
    lines = corpus.read_text(encoding="utf-8").splitlines()
    jsonl = "".join(json.dumps({"id": i, "sentence": t}) + "\n" for i, t in enumerate(lines))
    client.put_object(Bucket=name, Key="c.jsonl", Body=jsonl.encode())
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"text": lines}), sink, row_group_size=7)
    client.put_object(Bucket=name, Key="c.parquet", Body=sink.getvalue().to_pybytes())
    return name


@pytest.mark.slow
def test_jsonl_and_parquet_on_s3_equal_the_local_text(
    local_ray: None,
    tiny_bert: Path,
    corpus: Path,
    reference: np.ndarray,
    bucket: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = corpus.read_text(encoding="utf-8").splitlines()
    for key, extra in (("c.parquet", []), ("c.jsonl", ["--text-field", "sentence"])):
        out = tmp_path / key
        argv = [*encode_argv(tiny_bert, corpus, out, SHARD), "--engine", "ray", *extra]
        argv[argv.index("--input") + 1] = f"s3://{bucket}/{key}"
        assert main(argv) == 0, capsys.readouterr().err
        np.testing.assert_allclose(vectors(out), reference, rtol=0, atol=1e-6)
        assert (out / "input.txt").read_text(encoding="utf-8").splitlines() == lines  # the staged texts
        assert json.loads((out / "input.source.json").read_text())["source"] == f"s3://{bucket}/{key}"
        assert ShardSet.open(out).texts([3, 50]) == [lines[3], ""]
        before = (out / "shard-00001.npy").stat().st_mtime_ns
        assert main(argv) == 0  # the same source again: every shard kept
        assert (out / "shard-00001.npy").stat().st_mtime_ns == before
    capsys.readouterr()
    argv[argv.index("--input") + 1] = f"s3://{bucket}/missing.jsonl"
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"s3://{bucket}/missing.jsonl does not exist" in err[0], err
    bad = [
        *encode_argv(tiny_bert, corpus, tmp_path / "bad", SHARD),
        "--engine",
        "ray",
        "--text-field",
        "body",
    ]
    bad[bad.index("--input") + 1] = f"s3://{bucket}/c.jsonl"
    assert main(bad) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"s3://{bucket}/c.jsonl:1: field 'body' must be a string" in err[0], err


def test_an_unreachable_object_store_is_one_line(
    tiny_bert: Path,
    corpus: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in (("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}"), ("AWS_ACCESS_KEY_ID", "k"),
                        ("AWS_SECRET_ACCESS_KEY", "s")):  # fmt: skip
        monkeypatch.setenv(name, value)
    argv = [*encode_argv(tiny_bert, corpus, tmp_path / "o", SHARD), "--engine", "ray"]
    argv[argv.index("--input") + 1] = "s3://nowhere/c.txt"
    start = time.monotonic()
    assert main(argv) == 2
    assert time.monotonic() - start < 30
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--input s3://nowhere/c.txt:" in err[0], err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_mine_on_ray_writes_the_in_process_triples(
    local_ray: None, tiny_bert: Path, corpus: Path, tmp_path: Path
) -> None:
    lines = [t for t in corpus.read_text(encoding="utf-8").splitlines() if t]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        "".join(
            json.dumps({"anchor": a, "positive": p}) + "\n"
            for a, p in zip(lines[::2], lines[1::2], strict=False)
        )
    )
    argv = ["mine", "--model", str(tiny_bert), "--pairs", str(pairs), "--num-negatives", "2"]
    assert main([*argv, "--output", str(tmp_path / "local.csv")]) == 0
    assert main([*argv, "--output", str(tmp_path / "ray.csv"), "--engine", "ray"]) == 0
    local = (tmp_path / "local.csv").read_text(encoding="utf-8")
    assert (tmp_path / "ray.csv").read_text(encoding="utf-8") == local
    assert len(local.splitlines()) == 1 + 2 * len(lines[1::2])


@pytest.mark.slow
def test_the_teacher_cache_on_ray_equals_the_in_process_cache_and_is_reused_by_it(
    local_ray: None, tiny_bert: Path, corpus: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    teacher = TeacherConfig(str(tiny_bert), pooler="avg", max_length=12)
    texts = list(dict.fromkeys(t for t in corpus.read_text(encoding="utf-8").splitlines() if t))
    engine = TeacherEngine("ray")
    try:
        on_ray = teacher_vectors(teacher, texts, tmp_path / "ray", shard_size=SHARD, engine=engine)
    finally:
        engine.close()
    in_process = teacher_vectors(teacher, texts, tmp_path / "local", shard_size=SHARD)
    rows = np.arange(len(texts))
    assert (
        on_ray.rows == in_process.rows == len(texts)
        and len(on_ray.manifest["shards"]) == -(-len(texts) // SHARD) > 1
    )
    assert json.loads((on_ray.folder / "shard-00000.json").read_text())["engine"] == "ray"
    np.testing.assert_allclose(on_ray.gather(rows), in_process.gather(rows), rtol=0, atol=1e-6)
    # the independent reference: the teacher's own encode of the texts, as the recipe sets it
    reference = ModelSpec(str(tiny_bert), pooler="avg").open().encode(texts, batch_size=8, max_length=12)
    np.testing.assert_allclose(on_ray.gather(rows), reference, rtol=0, atol=1e-6)
    # an entry the Ray engine wrote is the in-process cache's entry: reused, nothing encoded again
    with caplog.at_level(logging.INFO, logger="sentcl.methods.teacher_cache"):
        again = teacher_vectors(teacher, texts, tmp_path / "ray", shard_size=SHARD)
    assert "teacher vectors: reused" in caplog.text and "encoding" not in caplog.text
    np.testing.assert_array_equal(again.gather(rows), on_ray.gather(rows))


def test_a_teacher_cache_on_an_unreachable_ray_is_one_line_naming_the_key(
    tiny_bert: Path, tmp_path: Path
) -> None:
    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    engine = TeacherEngine("ray", f"127.0.0.1:{port}")
    start = time.perf_counter()
    with pytest.raises(
        ConfigError, match=rf"^model.teacher_ray_address 127.0.0.1:{port}: no Ray cluster answers"
    ):
        teacher_vectors(TeacherConfig(str(tiny_bert)), ["a dog", "a cat"], tmp_path, engine=engine)
    assert time.perf_counter() - start < 30
    with pytest.raises(ConfigError, match="model.teacher_ray_address .* needs model.teacher_engine=ray"):
        load_config(TrainConfig, None, ["model.teacher_ray_address=127.0.0.1:6379"])
    with pytest.raises(ConfigError, match="model.teacher_engine"):
        load_config(TrainConfig, None, ["model.teacher_engine=spark"])


@pytest.mark.slow
def test_ctrl_c_during_a_ray_encode_is_one_line_and_a_rerun_finishes_it(
    tiny_bert: Path, tmp_path: Path
) -> None:
    """A real ``sentcl encode --engine ray`` (its own local Ray) interrupted once its first shard is written:
    exit 130 and one line, no Ray process left behind in its session, the finished shards kept; the same command
    again encodes only the missing shards, and the folder equals the in-process encode."""
    corpus = write_corpus(tmp_path / "big.txt", 6_000)
    out, local = tmp_path / "ray", tmp_path / "local"
    argv = [
        sys.executable,
        "-m",
        "sentcl.cli",
        "-v",
        *encode_argv(tiny_bert, corpus, out, 200),
        "--engine",
        "ray",
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    assert proc.stderr is not None
    seen: list[str] = []
    for line in proc.stderr:  # interrupt it mid-work: once a shard is finished
        seen.append(line)
        if "written (" in line:
            break
    proc.send_signal(signal.SIGINT)
    err = "".join(seen) + proc.stderr.read()
    code = proc.wait(120)
    assert code == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.rstrip().splitlines()[-1] == "sentcl encode: interrupted"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _session_alive(proc.pid):
        time.sleep(0.5)
    assert not _session_alive(proc.pid), "Ray processes of the interrupted command are still running"
    kept = sorted(p.name for p in out.glob("shard-*.json"))
    assert 1 <= len(kept) < 30, err
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"{len(kept)} finished shard(s) kept (resume)" in done.stderr
    assert main(encode_argv(tiny_bert, corpus, local, 200)) == 0
    np.testing.assert_allclose(vectors(out), vectors(local), rtol=0, atol=1e-6)


def _session_alive(sid: int) -> bool:
    """Whether any process of session ``sid`` (the command and every process it started) still runs."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # after ")": state, ppid, pgrp, session
            return True
    return False
