"""``sentcl verify [--full]``: every file that sentcl's records name is checked against its SHA-256; a digest
from the fingerprint cache cannot see bit rot that left the file's metadata unchanged, ``--full`` does.

Such rot cannot be made from user space (any write changes ctime), so it is made as the cache would see it:
the file's bytes changed, then the cache entry for its new metadata given the old digest, which is exactly
what the cache holds when the medium rots under an unchanged inode."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from sentcl.cli import main
from sentcl.data.shards import encode_shards
from sentcl.files import fingerprint
from sentcl.index.faiss_build import build_from_shards
from sentcl.index.faiss_index import open_index
from tests.index.index_fixtures import Fixed, clustered


@pytest.fixture()
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SENTCL_CACHE", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"line {i}\n" for i in range(60)), encoding="utf-8")
    encode_shards(Fixed(clustered(60, 8, 0)), corpus, tmp_path / "art" / "emb", 20, model_name="fixed")
    build_from_shards(tmp_path / "art" / "emb", tmp_path / "art" / "flat", "flat")
    return tmp_path / "art"


def rot_under_the_cache(path: Path, at: int) -> None:
    """Change one byte of ``path`` and let the fingerprint cache vouch for the old digest at the new metadata."""
    old = fingerprint.file_sha256(path)
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    name = str(path.resolve())
    fingerprint._memo.pop(name, None)
    fingerprint._store(name, fingerprint._stat_key(path), old)
    assert fingerprint.file_sha256(path) == old  # the cache's view: unchanged


def test_verify_counts_every_recorded_file_once(built: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(built)]) == 0
    out = capsys.readouterr().out
    # 3 shards x (.npy, .offsets.npy) + index.faiss (a flat index holds no row map)
    assert "7 of 7 recorded files" in out, out
    recorded = fingerprint.recorded_files(built)
    named = {(m.parent / n).resolve() for m, files in recorded.items() for n in files}
    on_disk = {p.resolve() for p in built.rglob("*") if p.suffix == ".npy" or p.name == "index.faiss"}
    assert named == on_disk  # an independent listing of what sentcl wrote


def test_bit_rot_under_unchanged_metadata_is_found_only_by_full(
    built: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    shard = built / "emb" / "shard-00001.npy"
    rot_under_the_cache(shard, shard.stat().st_size - 3)
    # said once a process at DEBUG (--verbose): not a line at INFO on every load
    with caplog.at_level(logging.DEBUG, logger="sentcl.files.fingerprint"):
        fingerprint._said[0] = False
        open_index(built / "flat")  # a reader that verifies with cached digests: passes, and says how
        from sentcl.data.shards import ShardSet

        ShardSet.open(built / "emb").array(1)
    assert "comes from the fingerprint cache: run sentcl verify --full" in caplog.text
    assert main(["verify", str(built)]) == 0  # the cached view
    capsys.readouterr()
    assert main(["verify", "--full", str(built)]) == 2
    captured = capsys.readouterr()
    assert "damaged: " in captured.out and "shard-00001.npy changed since it was written" in captured.out
    assert "1 recorded file(s) changed since sentcl wrote them" in captured.err
    assert "6 of 7 recorded files" in captured.out and "every byte read" in captured.out


def test_verify_refuses_a_folder_without_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.json").write_text(json.dumps({"files": [1, 2]}), encoding="utf-8")
    assert main(["verify", str(tmp_path / "notes")]) == 2
    assert "holds no files recorded by sentcl" in capsys.readouterr().err
    np.testing.assert_equal(json.loads((tmp_path / "notes" / "a.json").read_text())["files"], [1, 2])
