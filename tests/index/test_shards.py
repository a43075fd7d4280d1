"""sentcl encode --shard-size: shards equal a one-shot encode, resume skips finished shards, manifest is right."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sentcl.cli import main
from sentcl.data.shards import ShardSet, count_lines, iter_line_chunks

LINES = [f"the {w} number {i} sits near the river" for i, w in enumerate(["cat", "dog", "man", "bird"] * 6)]
LINES[5] = ""  # an empty line keeps its row, as in a plain encode


def encode_one_npy(model: Path, corpus: Path, output: Path) -> None:
    """The reference: the same corpus encoded by plain ``sentcl encode`` into one .npy."""
    argv = ["encode", "--model", str(model), "--input", str(corpus), "--output", str(output)]
    assert main(argv) == 0


def write_corpus(path: Path, lines: list[str], trailing_newline: bool = True) -> Path:
    path.write_bytes(("\n".join(lines) + ("\n" if trailing_newline else "")).encode("utf-8"))
    return path


@pytest.mark.parametrize("trailing", [True, False])
def test_line_chunks_cover_the_file_with_byte_offsets(tmp_path: Path, trailing: bool) -> None:
    path = write_corpus(tmp_path / "c.txt", ["a", "bé", "", "c\r", "d"], trailing)
    assert count_lines(path) == 5
    chunks = list(iter_line_chunks(path, 2))
    assert [(i, first, texts) for i, first, texts, _ in chunks] == [
        (0, 1, ["a", "bé"]),
        (1, 3, ["", "c"]),
        (2, 5, ["d"]),
    ]
    raw = path.read_bytes()
    for _, _, texts, offsets in chunks:  # each offset is where its line starts in the file
        for text, off in zip(texts, offsets, strict=True):
            assert raw[off:].decode("utf-8").startswith(text)
    assert [i for i, *_ in iter_line_chunks(path, 2, wanted={2})] == [2]


def test_sharded_encode_equals_one_shot_and_resumes(
    tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_corpus(tmp_path / "corpus.txt", LINES)
    out = tmp_path / "shards"
    argv = ["encode", "--model", str(tiny_bert), "--input", str(corpus), "--output", str(out)]
    assert main([*argv, "--shard-size", "10", "--batch-size", "4"]) == 0
    encode_one_npy(tiny_bert, corpus, tmp_path / "one.npy")
    capsys.readouterr()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] and manifest["rows"] == len(LINES) and manifest["dim"] == 32
    assert manifest["model"] == str(tiny_bert) and manifest["pooler"] == "cls"
    assert manifest["sentcl_version"]
    assert [(s["start_line"], s["end_line"]) for s in manifest["shards"]] == [(1, 10), (11, 20), (21, 24)]
    shards = ShardSet.open(out)
    stacked = np.concatenate([a for _, a in shards.iter_arrays()])
    np.testing.assert_allclose(stacked, np.load(tmp_path / "one.npy"), atol=1e-5)
    assert shards.texts([0, 5, 23]) == [LINES[0], "", LINES[23]]

    # kill after shard 0: remove shards 1-2 (as if never written) and resume: shard 0 is not re-encoded
    mtime = (out / "shard-00000.npy").stat().st_mtime_ns
    for i in (1, 2):
        (out / f"shard-0000{i}.json").unlink()
    (out / "shard-00002.npy").unlink()
    assert main([*argv, "--shard-size", "10"]) == 0
    assert (out / "shard-00000.npy").stat().st_mtime_ns == mtime
    np.testing.assert_allclose(
        np.concatenate([a for _, a in ShardSet.open(out).iter_arrays()]), stacked, atol=1e-5
    )
    assert not list(out.glob(".tmp-*"))


def test_resume_with_other_settings_is_refused(
    tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_corpus(tmp_path / "corpus.txt", LINES)
    argv = ["encode", "--model", str(tiny_bert), "--input", str(corpus), "--output", str(tmp_path / "s")]
    assert main([*argv, "--shard-size", "10"]) == 0
    assert main([*argv, "--shard-size", "7"]) == 2
    err = capsys.readouterr().err
    assert "shard_size: 10 -> 7" in err and "new --output folder" in err


def test_memory_is_one_shard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The encoder only ever sees part of one shard (streaming, never the whole file); rows stay in order."""
    from sentcl.data import shards

    class Probe:
        embedding_dim, pooler, biggest = 3, "avg", 0

        def encode(self, texts: list[str], **_: object) -> np.ndarray:
            Probe.biggest = max(Probe.biggest, len(texts))
            return np.array([[float(t[1:]), 0, 1] for t in texts], dtype=np.float32)

    monkeypatch.setattr(shards, "ENCODE_CHUNK", 4)
    corpus = write_corpus(tmp_path / "c.txt", [f"s{i}" for i in range(95)])
    manifest = shards.encode_shards(Probe(), corpus, tmp_path / "o", 10, model_name="probe")
    assert Probe.biggest == 4 and manifest["rows"] == 95 and len(manifest["shards"]) == 10
    rows = np.concatenate([a for _, a in ShardSet.open(tmp_path / "o").iter_arrays()])
    np.testing.assert_array_equal(rows[:, 0], np.arange(95))


@pytest.mark.slow
def test_torchrun_ranks_encode_disjoint_shards(tmp_path: Path, tiny_bert: Path) -> None:
    """Two processes under torchrun: rank r writes shards r, r + 2, ...; the result equals one process."""
    corpus = write_corpus(tmp_path / "corpus.txt", LINES)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    launch = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_addr=127.0.0.1"]
    launch += [f"--master_port={port}", "-m", "sentcl.cli", "encode", "--model", str(tiny_bert)]
    launch += ["--input", str(corpus), "--output", str(tmp_path / "multi"), "--shard-size", "5"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(launch, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("wrote 24 x") == 1, done.stdout  # rank 0 alone reports the result
    manifest = json.loads((tmp_path / "multi" / "manifest.json").read_text())
    assert manifest["complete"] and [s["rank"] for s in manifest["shards"]] == [0, 1, 0, 1, 0]
    encode_one_npy(tiny_bert, corpus, tmp_path / "one.npy")
    multi = np.concatenate([a for _, a in ShardSet.open(tmp_path / "multi").iter_arrays()])
    np.testing.assert_allclose(multi, np.load(tmp_path / "one.npy"), atol=1e-5)
