"""Two processes that need the same teacher vectors (two trainings started together on one corpus): the second
waits for the first's encode and reuses it, where it used to fail on the first's temporary file ("holds files
sentcl did not write"). The other process is a real one: a Python subprocess calling ``teacher_vectors``."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from sentcl.config.teacher import TeacherConfig
from sentcl.files.fingerprint import lines_sha256
from sentcl.files.lock import ProcessLock
from sentcl.methods import teacher_cache as tc

TEXTS = [f"a sentence about the number {i}" for i in range(12)]
SCRIPT = """
import logging, sys
import numpy as np
from pathlib import Path
from sentcl.config.teacher import TeacherConfig
from sentcl.methods.teacher_cache import teacher_vectors
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
texts = [f"a sentence about the number {i}" for i in range(12)]
found = teacher_vectors(TeacherConfig(path=sys.argv[1], pooler="avg"), texts, Path(sys.argv[2]), shard_size=5)
np.save(sys.argv[3], found.gather(np.arange(len(texts))))
"""


def _lines(stream: object, into: queue.Queue[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.put(line)


def test_a_second_process_waits_for_the_encode_and_reuses_it(tiny_bert: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    teacher = TeacherConfig(path=str(tiny_bert), pooler="avg")
    key = tc.CacheKey.of(teacher, lines_sha256(map(tc.line_safe, TEXTS)))
    entry = cache / key.entry_name()
    out = tmp_path / "theirs.npy"
    with ProcessLock(cache / f".{entry.name}.lock", wait=False):  # this process is the one encoding
        other = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, str(tiny_bert), str(cache), str(out)],
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=_lines, args=(other.stderr, lines), daemon=True).start()
        seen, deadline = [], time.monotonic() + 120
        while not any("waiting for it to finish" in s for s in seen):
            assert other.poll() is None, "".join(seen)
            assert time.monotonic() < deadline, "".join(seen)
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                continue
        mine = tc._encode_entry(teacher, TEXTS, entry, key, None, None, 5, 8, None)
        assert not out.exists()  # it still waits while this process holds the entry
    assert other.wait(timeout=120) == 0
    time.sleep(0.2)  # the reader thread drains the last lines
    while not lines.empty():
        seen.append(lines.get())
    log = "".join(seen)
    assert f"is encoding {entry}" in log
    assert "teacher vectors: reused" in log and "encoding 12 sentences" not in log, log
    np.testing.assert_array_equal(np.load(out), mine.gather(np.arange(len(TEXTS))))


def test_one_teacher_named_three_ways_shares_one_entry(tiny_bert: Path, tmp_path: Path) -> None:
    """The entry is named by the folder the name resolves to: a short name, its folder's path and a link to it
    are one teacher, encoded once (shrink opens a teacher by its path, distill-static by its name)."""
    from sentcl.files.paths import resolve_model_path

    digest = lines_sha256(map(tc.line_safe, TEXTS))
    (tmp_path / "link").symlink_to(tiny_bert)
    names = [str(tiny_bert), str(tmp_path / "link"), os.path.relpath(tiny_bert)]
    assert len({tc.CacheKey.of(TeacherConfig(path=n), digest).entry_name() for n in names}) == 1
    minilm = [
        TeacherConfig(path="all-MiniLM-L6-v2"),
        TeacherConfig(path=resolve_model_path("all-MiniLM-L6-v2")),
    ]
    assert len({tc.CacheKey.of(t, digest).entry_name() for t in minilm}) == 1
    other = TeacherConfig(path=str(tiny_bert), max_length=8)  # what the vectors depend on still counts
    assert (
        tc.CacheKey.of(other, digest).entry_name()
        != tc.CacheKey.of(TeacherConfig(path=names[0]), digest).entry_name()
    )
