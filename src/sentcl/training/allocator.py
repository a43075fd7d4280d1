"""glibc malloc's settings at run time: its mmap threshold, and freed memory handed back to the system.

glibc serves blocks above a threshold with mmap (returned to the system on free) and the rest from the heap,
and raises the threshold after each large free. GradCache allocates and frees one chunk's activations many
times a step; after the threshold has climbed they come from the heap, whose freed pages are not returned,
so the resident set grows beyond the memory in use (docs/performance.md: 1.45x the batch-64 peak at batch 512
with the default, 1.09x with a fixed 128 KiB threshold). ``mallopt(M_MMAP_THRESHOLD, n)`` fixes the
threshold (and turns the adjustment off) for the rest of the process, as ``MALLOC_MMAP_THRESHOLD_=n`` does
at start-up.

A fixed threshold has a CPU price where large blocks come and go many times a second: each is a fresh
mmap, whose pages fault in (zeroed by the kernel) on first touch. The service's forward passes, of a few
hundred tokens each, ran 103 sentences per CPU-second that way against 148 on the heap
(``python -m bench.serve_passes``). ``PeriodicRelease`` keeps the
heap (glibc's adaptive threshold) and calls ``malloc_trim(0)`` at most once every ``interval_s`` seconds,
which returns every free page of every arena: the resident set follows the memory in use, and the pages
fault in once an interval instead of once a pass.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)
M_MMAP_THRESHOLD = -3  # glibc's malloc.h
DEFAULT_THRESHOLD = 128 * 1024
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _libc_function(name: str) -> Any:
    """glibc's function ``name`` through ctypes; None off Linux or where the C library lacks it (musl)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), name)
    except (OSError, AttributeError):
        return None


def fix_mmap_threshold(threshold: int = DEFAULT_THRESHOLD) -> bool:
    """Set glibc's mmap threshold to ``threshold`` bytes; False (and nothing changed) off glibc."""
    if threshold <= 0:
        raise ValueError(f"mmap threshold must be positive, got {threshold}")
    mallopt = _libc_function("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    applied = mallopt(M_MMAP_THRESHOLD, threshold) == 1
    if applied:
        logger.info(
            "glibc mmap threshold fixed at %d bytes (freed activations go back to the system)", threshold
        )
    return applied


def release_free_memory() -> bool:
    """Return the free pages of every malloc arena to the system (glibc's ``malloc_trim(0)``): True when
    some were returned; False when none were, or off glibc."""
    trim = _libc_function("malloc_trim")
    if trim is None:
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim(0) == 1


def resident_bytes() -> int:
    """This process's resident set in bytes (/proc/self/statm); 0 where there is no such file."""
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * PAGE_SIZE
    except (OSError, IndexError, ValueError):
        return 0


class PeriodicRelease:
    """``release`` (default ``release_free_memory``) once ``interval_s`` seconds of ``clock`` have passed since
    the last one, or sooner when the resident set (``resident``, bytes) has grown more than ``budget_bytes``
    above what it was right after the last release: call ``maybe()`` after each unit of work (the service:
    after each forward pass), from any thread. The interval alone lets a busy process touch as many freed pages
    as its passes reach in that time before they go back; the budget bounds that at any rate of work, and
    costs one read of /proc/self/statm a call. ``budget_bytes=None``: the interval alone."""

    def __init__(
        self,
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        release: Callable[[], object] = release_free_memory,
        budget_bytes: int | None = None,
        resident: Callable[[], int] = resident_bytes,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, got {interval_s}")
        if budget_bytes is not None and budget_bytes <= 0:
            raise ValueError(f"budget_bytes must be positive, got {budget_bytes}")
        self.interval_s = interval_s
        self.clock = clock
        self.release = release
        self.budget_bytes = budget_bytes
        self.resident = resident
        self.last: float | None = None  # when the last release ran (None: never)
        self.floor: int | None = None  # the resident set right after the last release (with a budget)
        self._lock = threading.Lock()

    def maybe(self) -> bool:
        """Release now if ``interval_s`` has passed since the last release (or none ran yet), or the resident
        set is over the budget; whether it did."""
        with self._lock:
            now = self.clock()
            due = self.last is None or now - self.last >= self.interval_s
            if not due and self.budget_bytes is not None and self.floor is not None:
                due = self.resident() > self.floor + self.budget_bytes
            if not due:
                return False
            self.last = now
            self.release()  # under the lock: two threads never trim at once
            if self.budget_bytes is not None:
                self.floor = self.resident()
        return True
