"""One writer at a time between sentcl processes: an exclusive ``fcntl.flock`` on a lock file holding its PID.

The OS drops the lock when its process ends, however it ends (a kill included), so a lock never outlives its
holder and a waiting process never waits on a dead one. ``ProcessLock(path, wait=False)`` refuses a held lock
(``LockHeld``, with the holder's PID: a run folder in use); ``wait=True`` calls ``waiting`` once with the
holder's PID and then blocks until the holder is done (a shared cache entry that another process is filling).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path
from types import TracebackType


class LockHeld(Exception):
    """``path`` is locked by another process (``holder``: its PID as it wrote it, or ``unknown``)."""

    def __init__(self, path: Path, holder: str) -> None:
        super().__init__(f"{path} is held by process {holder}")
        self.path = path
        self.holder = holder


class ProcessLock:
    """An exclusive lock on ``path`` (created if missing), held until ``release`` or the process ends. An
    ``OSError`` opening the file is the caller's to word (it names the folder the user gave)."""

    def __init__(self, path: Path, *, wait: bool, waiting: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.fd: int | None = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(self.fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            if not wait:
                os.close(self.fd)
                self.fd = None
                raise LockHeld(path, holder) from None
            if waiting is not None:
                waiting(holder)
            fcntl.flock(self.fd, fcntl.LOCK_EX)  # the holder's end (or death) releases it
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)  # no PID left behind: the path is free
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> ProcessLock:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
