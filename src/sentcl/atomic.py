"""Atomic file writes, the one mechanism for every artefact sentcl writes: temporary file, fsync, rename.

A reader sees either the old file or the complete new one, never a prefix; a kill mid-write leaves only a
``.tmp-<name>-<8 hex>`` file beside the target (the name ``training.checkpoint.recover_run_folder`` and the
next write of the same target clean up). Folders are written whole by ``training.checkpoint.atomic_dir_write``,
which flushes them with ``fsync_tree``.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (no-op where directories cannot be opened or fsynced)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def fsync_tree(folder: Path) -> None:
    """Flush every file, then every folder (deepest first), of ``folder`` to disk; a file's error raises."""
    dirs = []
    for root, _, files in os.walk(folder):
        dirs.append(root)
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    for root in reversed(dirs):
        fsync_dir(Path(root))


def atomic_write(path: Path, write: Callable[[IO[bytes]], None]) -> Path:
    """Call ``write(handle)`` on a temporary file beside ``path``, fsync, then rename it onto ``path``."""
    path = Path(path)
    tmp = path.with_name(f".tmp-{path.name}-{uuid.uuid4().hex[:8]}")
    try:
        with open(tmp, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError) and err.filename is None:
            err.filename = str(path)  # a failed write() names no file: name the target, not the temporary
        raise
    fsync_dir(path.parent)
    return path


def atomic_write_text(path: Path, text: str) -> Path:
    """Write a UTF-8 text file (results.json, config.json, a model card) whole or not at all."""
    data = text.encode("utf-8")
    return atomic_write(path, lambda handle: handle.write(data))


def atomic_write_json(path: Path, payload: Any, **dumps: Any) -> Path:
    """``payload`` as indented JSON (non-ASCII kept) plus a newline; ``dumps`` go to ``json.dumps``."""
    return atomic_write_text(path, json.dumps(payload, **{"indent": 2, "ensure_ascii": False} | dumps) + "\n")


class _PlainWriter:
    """A file seen by numpy as a plain writer: it then writes through ``handle.write`` (in chunks), whose
    failure is an OSError with the OS's errno (EFBIG, ENOSPC), not C stdio's "N requested and M written"."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.write = handle.write


def atomic_save_npy(path: Path, array: np.ndarray) -> Path:
    return atomic_write(path, lambda handle: np.save(_PlainWriter(handle), array))  # type: ignore[arg-type]
