"""glibc malloc's mmap threshold, set at run time.

glibc serves blocks above a threshold with mmap (returned to the system on free) and the rest from the heap,
and raises the threshold after each large free. GradCache allocates and frees one chunk's activations many
times a step; after the threshold has climbed they come from the heap, whose freed pages are not returned,
so the resident set grows beyond the memory in use (docs/performance.md: 1.45x the batch-64 peak at batch 512
with the default, 1.09x with a fixed 128 KiB threshold). ``mallopt(M_MMAP_THRESHOLD, n)`` fixes the
threshold (and turns the adjustment off) for the rest of the process, as ``MALLOC_MMAP_THRESHOLD_=n`` does
at start-up.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys

logger = logging.getLogger(__name__)
M_MMAP_THRESHOLD = -3  # glibc's malloc.h
DEFAULT_THRESHOLD = 128 * 1024


def fix_mmap_threshold(threshold: int = DEFAULT_THRESHOLD) -> bool:
    """Set glibc's mmap threshold to ``threshold`` bytes; False (and nothing changed) off glibc."""
    if threshold <= 0:
        raise ValueError(f"mmap threshold must be positive, got {threshold}")
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c") or "libc.so.6"
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # not glibc (e.g. musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    applied = mallopt(M_MMAP_THRESHOLD, threshold) == 1
    if applied:
        logger.info(
            "glibc mmap threshold fixed at %d bytes (freed activations go back to the system)", threshold
        )
    return applied
