"""sentcl.files.fingerprint: SHA-256 of every byte (checked against hashlib over the whole file), the sidecar
cache (a second call reads nothing; a rewrite with the old mtime is hashed again), the tree fingerprint of a
model folder (a copy is equal, one changed byte anywhere is not), and the records that manifests keep."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sentcl.files import fingerprint as fp
from sentcl.files.fingerprint import (
    IntegrityError,
    file_records,
    file_sha256,
    model_fingerprint,
    tree_fingerprint,
    verify_records,
)

FOLDER_FILES = {
    "config.json": b'{"hidden_size": 32}',
    "model.safetensors": bytes(range(256)) * 40,
    "vocab.txt": b"a\nb\n",
}


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SENTCL_CACHE", str(tmp_path_factory.mktemp("fp-cache")))
    fp._memo.clear()


def model_folder(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, data in FOLDER_FILES.items():
        (root / name).write_bytes(data)
    return root


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=3 * fp.BLOCK // 2 + 7))
def test_file_sha256_is_hashlib_over_every_byte(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    assert file_sha256(path, cached=False) == hashlib.sha256(data).hexdigest()
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()


def test_the_cache_skips_an_unchanged_file_and_sees_a_rewrite_with_the_old_mtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "w.bin"
    path.write_bytes(b"x" * 1000)
    first = file_sha256(path)
    fp._memo.clear()  # a new process: only the sidecar file is left
    reads: list[Path] = []
    real = fp._hash_file
    monkeypatch.setattr(fp, "_hash_file", lambda p: reads.append(p) or real(p))
    assert file_sha256(path) == first and reads == []  # from the sidecar cache: no byte read
    stat = path.stat()
    path.write_bytes(b"y" * 1000)  # same size ...
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # ... and the old mtime put back
    assert file_sha256(path) == hashlib.sha256(b"y" * 1000).hexdigest() and reads == [path]


def test_an_unwritable_cache_is_only_slower(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("SENTCL_CACHE", str(tmp_path / "afile"))  # a file: the sidecar cannot be written
    (tmp_path / "d.bin").write_bytes(b"abc")
    assert file_sha256(tmp_path / "d.bin") == hashlib.sha256(b"abc").hexdigest()


def test_a_copy_has_the_same_fingerprint_and_hidden_files_do_not_count(tmp_path: Path) -> None:
    a = model_folder(tmp_path / "a")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    (b / ".sentcl").write_text("{}")
    (b / ".git").mkdir()
    (b / ".git" / "HEAD").write_text("ref")
    assert model_fingerprint(str(a)) == model_fingerprint(str(b)) is not None
    assert model_fingerprint("no-such-model-anywhere") is None
    (b / "extra.txt").write_text("another file")
    assert tree_fingerprint(b) != tree_fingerprint(a)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(sorted(FOLDER_FILES)), at=st.integers(min_value=0), bit=st.integers(0, 7))
def test_one_changed_byte_anywhere_changes_the_model_fingerprint(
    tmp_path_factory: pytest.TempPathFactory, which: str, at: int, bit: int
) -> None:
    """A change in the middle of a weights file (the sampled hash missed it) changes the fingerprint."""
    folder = model_folder(tmp_path_factory.mktemp("m"))
    before = model_fingerprint(str(folder))
    data = bytearray((folder / which).read_bytes())
    data[at % len(data)] ^= 1 << bit  # same size
    (folder / which).write_bytes(bytes(data))
    assert model_fingerprint(str(folder)) != before


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(sorted(FOLDER_FILES)), at=st.integers(min_value=0), bit=st.integers(0, 7))
def test_records_refuse_one_changed_byte_naming_the_file(
    tmp_path_factory: pytest.TempPathFactory, which: str, at: int, bit: int
) -> None:
    folder = model_folder(tmp_path_factory.mktemp("r"))
    records = file_records(folder, sorted(FOLDER_FILES))
    verify_records(folder, records, "manifest.json", "rebuild it")  # untouched: accepted
    data = bytearray((folder / which).read_bytes())
    data[at % len(data)] ^= 1 << bit
    (folder / which).write_bytes(bytes(data))
    with pytest.raises(
        IntegrityError, match=rf"{which} changed since it was written: .* manifest\.json records .*rebuild it"
    ):
        verify_records(folder, records, "manifest.json", "rebuild it")


def test_records_refuse_cut_grown_missing_files_and_a_damaged_record(tmp_path: Path) -> None:
    folder = model_folder(tmp_path / "m")
    records = file_records(folder, sorted(FOLDER_FILES))
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(IntegrityError, match=r"model\.safetensors is truncated: it holds 100 bytes"):
        verify_records(folder, records, "m.json", "fix")
    weights.write_bytes(FOLDER_FILES["model.safetensors"] + b"!")
    with pytest.raises(IntegrityError, match=r"has grown"):
        verify_records(folder, records, "m.json", "fix")
    weights.unlink()
    with pytest.raises(IntegrityError, match=r"model\.safetensors is missing \(m\.json records it\)"):
        verify_records(folder, records, "m.json", "fix")
    for bad in ([], {"a": 1}, {"a": {"sha256": 5, "bytes": 1}}):
        with pytest.raises(IntegrityError, match=r"m\.json: its 'files' record is damaged"):
            verify_records(folder, bad, "m.json", "fix")
