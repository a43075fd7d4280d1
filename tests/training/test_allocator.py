"""sentcl.training.allocator: after fix_mmap_threshold, freed large blocks leave the resident set; after
release_free_memory, freed heap pages do; PeriodicRelease releases at most once an interval.

Each allocator case runs in a fresh process: free a 16 MiB block (glibc then raises its mmap threshold to
16 MiB), allocate 64 blocks of 1 MiB with 4 KiB blocks between them (so the heap cannot shrink from the top),
touch them, free them, and read VmRSS. With glibc's default the 1 MiB blocks came from the heap and their
pages stay resident; with the fixed threshold they were mmapped and went back to the system; with the
default and then ``malloc_trim(0)`` they stay in the heap and their pages go back.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sentcl.training.allocator import PeriodicRelease

PROGRAM = r"""
import ctypes, sys
from sentcl.training.allocator import fix_mmap_threshold, release_free_memory

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
if sys.argv[1] == "fixed":
    assert fix_mmap_threshold()
big = libc.malloc(16 << 20); ctypes.memset(big, 1, 16 << 20); libc.free(big)
blocks, small = [], []
for _ in range(64):
    block = libc.malloc(1 << 20); ctypes.memset(block, 1, 1 << 20); blocks.append(block)
    small.append(libc.malloc(4096))
before = rss_mb()
for block in blocks:
    libc.free(block)
if sys.argv[1] == "release":
    assert release_free_memory()
print(before - rss_mb())
"""


def released_mb(mode: str) -> float:
    done = subprocess.run([sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt (Linux only)")
def test_fixed_threshold_returns_freed_blocks_to_the_system() -> None:
    assert released_mb("fixed") > 56, "64 MiB freed: nearly all of it must leave the resident set"
    assert released_mb("default") < 16, "with the dynamic threshold the freed heap pages stay resident"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim (Linux only)")
def test_release_returns_freed_heap_pages_to_the_system() -> None:
    assert released_mb("release") > 56, "64 MiB freed in the heap: malloc_trim must return nearly all of it"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@given(
    interval=st.floats(0.01, 10),
    gaps=st.lists(st.floats(0, 5), max_size=60),
)
def test_periodic_release_runs_at_most_once_an_interval(interval: float, gaps: list[float]) -> None:
    """Generated call times: the first call releases, releases lie at least ``interval`` apart, and a call
    that does not release comes less than ``interval`` after the last release."""
    clock, released = Clock(), []
    rule = PeriodicRelease(interval, clock=clock, release=lambda: released.append(clock.now))
    calls = []
    for gap in [0.0, *gaps]:
        clock.now += gap
        calls.append((clock.now, rule.maybe()))
    assert [t for t, did in calls if did] == released and calls[0][1]
    assert all(b - a >= interval for a, b in itertools.pairwise(released))
    last = None
    for t, did in calls:  # a call releases exactly when the last release is an interval or more behind
        assert did == (last is None or t - last >= interval)
        last = t if did else last


def test_periodic_release_named_example_and_threads() -> None:
    clock, count = Clock(), []
    rule = PeriodicRelease(1.0, clock=clock, release=lambda: count.append(1))
    for now, expected in [(0.0, True), (0.5, False), (0.999, False), (1.0, True), (1.5, False), (3.2, True)]:
        clock.now = now
        assert rule.maybe() is expected
    inside, most = [0], [0]

    def slow_release() -> None:  # no two threads inside at once
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.002)
        inside[0] -= 1

    threaded = PeriodicRelease(1e-4, release=slow_release)
    workers = [threading.Thread(target=lambda: [threaded.maybe() for _ in range(50)]) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert most[0] == 1
    with pytest.raises(ValueError, match="must be positive"):
        PeriodicRelease(0)


def test_threshold_must_be_positive() -> None:
    from sentcl.training.allocator import fix_mmap_threshold

    with pytest.raises(ValueError, match="must be positive"):
        fix_mmap_threshold(0)
