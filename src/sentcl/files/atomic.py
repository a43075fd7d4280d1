"""Atomic file writes, the one mechanism for every artefact sentcl writes: temporary file, fsync, rename.

A reader sees either the old file or the complete new one, never a prefix; a kill mid-write leaves only a
``.tmp-<name>-p<pid>h<host tag>-<8 hex>`` file beside the target. A file has no room for an owner record, so
its name carries the owner (``FILE_TEMP_RE``): ``training.checkpoint.recover_run_folder`` and the next claim of
the same target (``sentcl.files.output.claim_file``) remove it once that process is gone. Folders are written whole by ``atomic_dir_write``, which flushes
them with ``fsync_tree`` and raises ``AtomicWriteError`` (an ``OSError`` naming the folder and the OS's
reason) when the write fails; a caller with its own wording (a checkpoint) wraps it.
"""

from __future__ import annotations

import ctypes
import functools
import json
import logging
import math
import os
import re
import shutil
import socket
import sys
import uuid
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

#: A file temporary's name: the target's name, the writing process's id and host tag (``host_tag``).
FILE_TEMP_RE = re.compile(r"^\.tmp-(.+)-p(\d+)h([0-9a-f]{6})-[0-9a-f]{8}$")
#: The names ``atomic_write`` and ``atomic_dir_write`` give their temporaries (``.tmp-``) and, between two
#: renames, the replaced folder (``.old-``): ``.<kind>-<target name>-<8 hex>``.
STALE_RE = re.compile(r"^\.(tmp|old)-(.+)-[0-9a-f]{8}$")

_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100


class AtomicWriteError(OSError):
    """A folder could not be written whole (a full disk, a read-only folder); nothing was put in its place."""

    def __init__(self, target: Path, reason: str, cause: BaseException | None = None) -> None:
        # errno, strerror and filename as the OS gave them (the file it refused, else the target), so the CLI
        # can name the user's path and the reason (sentcl.files.pathcheck.os_error_message)
        filename = getattr(cause, "filename", None) or str(target)
        super().__init__(getattr(cause, "errno", None), reason, filename)
        self.target = target
        self.reason = reason

    def __str__(self) -> str:
        return f"could not write {self.target}: {self.reason}"


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


@functools.cache
def host_tag() -> str:
    """Six hex digits of this machine's name: a file temporary's host, so a shared folder's other machine
    never takes this machine's live write for a dead one."""
    return f"{zlib.crc32(socket.gethostname().encode('utf-8', 'surrogateescape')) & 0xFFFFFF:06x}"


def file_temp_name(path: Path) -> Path:
    """``.tmp-<name>-p<pid>h<host tag>-<8 hex>`` beside ``path`` (``FILE_TEMP_RE``)."""
    return path.with_name(f".tmp-{path.name}-p{os.getpid()}h{host_tag()}-{uuid.uuid4().hex[:8]}")


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (one of another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_file_temps(target: Path) -> list[Path]:
    """Remove the file temporaries of ``target`` that a killed write left (``sentcl.files.output``'s rules), each named in a warning
    with its size; warn about (and keep) the ones not provably left by a finished process. Returns the removed."""
    log = logging.getLogger(__name__)
    target = Path(target)
    try:
        siblings = sorted(p for p in target.parent.iterdir() if p.name.startswith(f".tmp-{target.name}-"))
    except OSError:
        return []  # an unreadable folder: the write itself will name it
    removed = []
    for tmp in siblings:
        if tmp.is_symlink() or not tmp.is_file():
            continue  # a folder is remove_stale_temps's; a link or special file is never a temporary of ours
        size = tmp.stat().st_size
        owner = FILE_TEMP_RE.match(tmp.name)
        if owner and owner.group(1) == target.name and owner.group(3) == host_tag():
            if process_alive(int(owner.group(2))):
                log.warning(
                    "%s (%d bytes) is being written by process %s, still running", tmp, size, owner[2]
                )
                continue
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
            log.warning(
                "removed %s (%d bytes), the temporary file of an interrupted write of %s", tmp, size, target
            )
        elif owner or STALE_RE.match(tmp.name):
            log.warning(
                "%s (%d bytes) looks like the temporary file of an interrupted write of %s, but its name does not "
                "prove it was this machine's sentcl: kept; delete it if no write of %s is running",
                tmp,
                size,
                target,
                target.name,
            )
    return removed


def atomic_write(path: Path, write: Callable[[IO[bytes]], None]) -> Path:
    """Call ``write(handle)`` on a temporary file beside ``path``, fsync, then rename it onto ``path``."""
    path = Path(path)
    tmp = file_temp_name(path)
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


def json_safe(value: Any) -> Any:
    """nan/inf -> None (strict JSON has no NaN); numpy scalars -> Python numbers; tuples -> lists; keys -> str."""
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    numpy = sys.modules.get("numpy")  # a numpy scalar exists only once numpy is imported: no import here
    if numpy is not None and isinstance(value, numpy.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def dumps_strict(payload: Any, **dumps: Any) -> str:
    """``payload`` as strict JSON, the one way sentcl writes JSON: a non-finite number is ``null``
    (``json_safe``; a result that can be undefined says why in a field of its own), never ``NaN``."""
    return json.dumps(json_safe(payload), **{"indent": 2, "ensure_ascii": False} | dumps, allow_nan=False)


def atomic_write_json(path: Path, payload: Any, **dumps: Any) -> Path:
    """``payload`` as indented strict JSON (``dumps_strict``; non-ASCII kept) plus a newline; ``dumps`` go to
    ``json.dumps``."""
    return atomic_write_text(path, dumps_strict(payload, **dumps) + "\n")


class _PlainWriter:
    """A file seen by numpy as a plain writer: it then writes through ``handle.write`` (in chunks), whose
    failure is an OSError with the OS's errno (EFBIG, ENOSPC), not C stdio's "N requested and M written"."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.write = handle.write


def atomic_save_npy(path: Path, array: np.ndarray) -> Path:
    import numpy as np  # on use: the CLI's parser imports this module without numpy

    return atomic_write(path, lambda handle: np.save(_PlainWriter(handle), array))  # type: ignore[arg-type]


@functools.cache
def _renameat2() -> Callable[..., int] | None:
    try:
        return ctypes.CDLL(None, use_errno=True).renameat2  # glibc >= 2.28
    except (AttributeError, OSError):
        return None


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2); False where the OS or filesystem cannot."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    return renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0


def _io_failure(err: BaseException) -> str | None:
    """The OS's reason when ``err`` is a failed write (an OSError, or safetensors' I/O error), else None."""
    if isinstance(err, OSError):
        return err.strerror or str(err)
    safetensors = sys.modules.get("safetensors")  # not imported: the error cannot be one of its own
    if safetensors is not None and isinstance(err, safetensors.SafetensorError) and "I/O error" in str(err):
        return str(err)
    return None


def atomic_dir_write(target: Path, write: Callable[[Path], None], temp: Path | None = None) -> None:
    """Call ``write(tmp)`` on a fresh folder, fsync it, then put it in place of ``target``.

    A failed write (a full disk, a read-only filesystem) removes the temporary folder and raises
    ``AtomicWriteError`` naming the target and the OS's reason; any other error is raised as it is.
    Replacing an existing folder swaps the two atomically where the OS can (Linux
    ``renameat2(RENAME_EXCHANGE)``); a symbolic link to a folder stays, and the folder it names is replaced
    (the temporary sits beside that folder); elsewhere it takes two renames, and a kill between them leaves
    ``.old-<name>-*`` (``STALE_RE``) for the owner's recovery to put back. ``temp``: the temporary folder's
    path (``sentcl.files.output.temp_name``, which marks its owner), else ``.tmp-<name>-<8 hex>``.
    """
    target = Path(target)
    if target.is_symlink() and target.is_dir():  # a link to a folder: the folder it names is replaced
        real = Path(os.path.realpath(target))
        temp = temp and real.parent / temp.name.replace(f".tmp-{target.name}-", f".tmp-{real.name}-", 1)
        target = real
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise AtomicWriteError(target, err.strerror or str(err)) from err
    tmp = temp or target.parent / f".tmp-{target.name}-{uuid.uuid4().hex[:8]}"
    try:
        write(tmp)
        fsync_tree(tmp)
    except BaseException as err:
        shutil.rmtree(tmp, ignore_errors=True)
        reason = _io_failure(err)
        if reason is None:
            raise
        raise AtomicWriteError(target, reason, err) from err
    if target.exists() and _exchange(tmp, target):
        shutil.rmtree(tmp)  # now holds the old contents
    else:
        old = None
        if target.exists():
            old = target.parent / f".old-{target.name}-{uuid.uuid4().hex[:8]}"
            target.rename(old)
        tmp.rename(target)
        if old is not None:
            shutil.rmtree(old)
    fsync_dir(target.parent)
