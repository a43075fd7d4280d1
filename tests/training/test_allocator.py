"""sentcl.training.allocator: after fix_mmap_threshold, freed large blocks leave the resident set.

Each case runs in a fresh process: free a 16 MiB block (glibc then raises its mmap threshold to 16 MiB),
allocate 64 blocks of 1 MiB with 4 KiB blocks between them (so the heap cannot shrink from the top),
touch them, free them, and read VmRSS. With glibc's default the 1 MiB blocks came from the heap and their
pages stay resident; with the fixed threshold they were mmapped and went back to the system.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

PROGRAM = r"""
import ctypes, sys
from sentcl.training.allocator import fix_mmap_threshold

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
print(before - rss_mb())
"""


def released_mb(mode: str) -> float:
    done = subprocess.run([sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt (Linux only)")
def test_fixed_threshold_returns_freed_blocks_to_the_system() -> None:
    assert released_mb("fixed") > 56, "64 MiB freed: nearly all of it must leave the resident set"
    assert released_mb("default") < 16, "with the dynamic threshold the freed heap pages stay resident"


def test_threshold_must_be_positive() -> None:
    from sentcl.training.allocator import fix_mmap_threshold

    with pytest.raises(ValueError, match="must be positive"):
        fix_mmap_threshold(0)
