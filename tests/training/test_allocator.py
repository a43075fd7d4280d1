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


@given(
    interval=st.floats(0.01, 10),
    budget=st.integers(1, 1 << 30),
    steps=st.lists(st.tuples(st.floats(0, 5), st.integers(0, 1 << 31)), max_size=60),
)
def test_periodic_release_with_a_budget(interval: float, budget: int, steps: list[tuple[float, int]]) -> None:
    """Generated call times and resident sizes, against the rule written out here: a call releases when it is
    the first, when ``interval`` has passed since the last release, or when the resident set is more than
    ``budget`` above what it read right after the last release (read again after each release)."""
    clock, released, rss = Clock(), [], [0]
    rule = PeriodicRelease(
        interval,
        clock=clock,
        release=lambda: released.append(clock.now),
        budget_bytes=budget,
        resident=lambda: rss[0],
    )
    last, floor, times = None, None, []
    for gap, resident in [(0.0, 0), *steps]:
        clock.now += gap
        rss[0] = resident
        expected = last is None or clock.now - last >= interval or resident > floor + budget
        assert rule.maybe() is expected
        if expected:
            last, floor = clock.now, resident
            times.append(clock.now)
    assert released == times and rule.floor == floor


def test_periodic_release_budget_named_example() -> None:
    clock, count, rss = Clock(), [], [100]
    rule = PeriodicRelease(
        1.0, clock=clock, release=lambda: count.append(1), budget_bytes=10, resident=lambda: rss[0]
    )
    for now, resident, expected in [(0.0, 100, True), (0.1, 110, False), (0.2, 111, True), (0.3, 120, False)]:
        clock.now, rss[0] = now, resident
        assert rule.maybe() is expected, (now, resident)
    assert rule.floor == 111 and len(count) == 2
    with pytest.raises(ValueError, match="must be positive"):
        PeriodicRelease(1.0, budget_bytes=0)


def test_resident_bytes_follows_a_touched_block() -> None:
    """resident_bytes against /proc/self/status' VmRSS, before and after 64 MiB of fresh pages are touched (an
    anonymous map: new pages whatever the process' heap already holds, as in a long-lived test worker)."""
    import mmap

    import numpy as np

    from sentcl.training.allocator import resident_bytes

    def vm_rss() -> int:
        with open("/proc/self/status", encoding="ascii") as handle:
            return next(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmRSS:"))

    before, status_before = resident_bytes(), vm_rss()
    block = mmap.mmap(-1, 64 << 20)
    pages = np.frombuffer(block, dtype=np.uint8)  # (64 MiB,)
    pages[:: mmap.PAGESIZE] = 1  # one byte a page: every page touched, resident
    after, status_after = resident_bytes(), vm_rss()
    assert abs(before - status_before) < 4 << 20 and abs(after - status_after) < 4 << 20
    assert after - before > 60 << 20 and int(pages.sum()) == (64 << 20) // mmap.PAGESIZE
    del pages
    block.close()


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
