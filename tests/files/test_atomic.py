"""``sentcl.files.atomic.atomic_dir_write``: a folder appears whole or not at all, and a failed write is a neutral
``AtomicWriteError`` (an OSError naming the folder and the OS's reason), in every command that writes one.

A read-only folder is simulated by making ``os.mkdir``/``os.open`` fail with EROFS below it (the tests run as
root, where chmod does not stop writes).
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "index"))
from index_fixtures import write_shards  # noqa: E402

from sentcl.cli import main  # noqa: E402
from sentcl.files.atomic import AtomicWriteError, atomic_dir_write  # noqa: E402


def read_only(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Every mkdir and open below ``folder`` fails as on a read-only filesystem."""
    real_mkdir, real_open = os.mkdir, os.open

    def refuse(path: object) -> None:
        if str(path).startswith(str(folder)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    monkeypatch.setattr(os, "mkdir", lambda p, *a, **k: (refuse(p), real_mkdir(p, *a, **k))[1])
    monkeypatch.setattr(os, "open", lambda p, *a, **k: (refuse(p), real_open(p, *a, **k))[1])


def test_a_failed_folder_write_names_the_folder_and_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def write(tmp: Path) -> None:
        tmp.mkdir()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(AtomicWriteError) as caught:
        atomic_dir_write(tmp_path / "out", write)
    assert isinstance(caught.value, OSError)
    assert str(caught.value) == f"could not write {tmp_path / 'out'}: No space left on device"
    assert "checkpoint" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # the temporary folder is gone, nothing is in place
    ro = tmp_path / "ro"
    ro.mkdir()
    read_only(monkeypatch, ro)
    with pytest.raises(AtomicWriteError, match=r"could not write .*ro/sub/out: Read-only file system$"):
        atomic_dir_write(ro / "sub" / "out", lambda tmp: tmp.mkdir())


def test_another_error_is_raised_as_it_is_and_leaves_nothing(tmp_path: Path) -> None:
    def write(tmp: Path) -> None:
        tmp.mkdir()
        raise KeyError("not an I/O failure")

    with pytest.raises(KeyError):
        atomic_dir_write(tmp_path / "out", write)
    assert list(tmp_path.iterdir()) == []


def test_index_build_into_a_read_only_folder_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An index build's failed write names the index folder, not a checkpoint."""
    emb, _ = write_shards(tmp_path)
    ro = tmp_path / "rodir"
    ro.mkdir()
    read_only(monkeypatch, ro)
    argv = ["index", "build", "--embeddings", str(emb), "--type", "flat", "--output", str(ro / "idx")]
    assert main(argv) == 1  # a write the OS refused (docs/reliability.md: exit 1)
    err = capsys.readouterr().err
    assert (
        err.startswith("sentcl index: error: cannot write --output ")
        and "rodir/idx: Read-only file system" in err
    )
    assert "checkpoint" not in err and "Traceback" not in err
    assert list(ro.iterdir()) == []


def test_a_good_write_replaces_the_folder_whole(tmp_path: Path) -> None:
    target = tmp_path / "out"
    atomic_dir_write(target, lambda tmp: (tmp.mkdir(), np.save(tmp / "a.npy", np.arange(3)))[0])
    atomic_dir_write(target, lambda tmp: (tmp.mkdir(), np.save(tmp / "b.npy", np.arange(4)))[0])
    assert sorted(p.name for p in target.iterdir()) == ["b.npy"]
    assert np.load(target / "b.npy").tolist() == [0, 1, 2, 3]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
