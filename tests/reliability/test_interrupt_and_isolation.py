"""Ctrl-C ends a real ``sentcl`` process with one line and exit 130 (no traceback, nothing half-written); one
sentence that fails its encode fails only its own request in the service's micro-batcher, never the other
clients' requests batched with it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from sentcl.serve.batching import MicroBatcher
from sentcl.serve.limits import ServiceError


@pytest.mark.slow
def test_ctrl_c_during_encode_is_one_line_and_130(tiny_bert: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "big.txt"
    corpus.write_text("a man plays a guitar on the stage near the river\n" * 100_000)
    out = tmp_path / "o.npy"
    argv = [sys.executable, "-m", "sentcl.cli", "-v", "encode", "--model", str(tiny_bert)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [*argv, "--input", str(corpus), "--output", str(out)], stderr=subprocess.PIPE, text=True, env=env
    )
    assert proc.stderr is not None
    first = proc.stderr.readline()  # the command runs (its first log line): interrupt it mid-work
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    code = proc.wait(60)
    err = first + rest
    assert code == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.rstrip().splitlines()[-1] == "sentcl encode: interrupted"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.txt"]  # no output, no temporary


def test_a_failing_sentence_fails_only_its_own_request() -> None:
    def encode(inputs: list[str]) -> np.ndarray:
        if "poison" in inputs:
            raise IndexError("index out of range in self")
        return np.array([[len(text), 1.0] for text in inputs], dtype=np.float32)  # (n, 2)

    async def scenario() -> list[np.ndarray | BaseException]:
        batcher = MicroBatcher(encode, workers=1, max_batch_size=64, max_wait_s=0.05)
        texts = [[f"good {i}"] for i in range(40)]
        texts[17] = ["ok", "poison"]
        jobs = [batcher.submit(t, [3] * len(t)) for t in texts]
        try:
            return await asyncio.gather(*jobs, return_exceptions=True)
        finally:
            await batcher.close()

    results = asyncio.run(asyncio.wait_for(scenario(), 30))
    failed = [i for i, r in enumerate(results) if isinstance(r, BaseException)]
    assert failed == [17]
    assert isinstance(results[17], ServiceError) and results[17].status == 500
    for i, rows in enumerate(results):
        if i != 17:
            np.testing.assert_array_equal(rows, [[len(f"good {i}"), 1.0]])


FINALISER_SCRIPT = """
import os, signal, sys, time
from sentcl.cli import interrupt

class Finalised:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)  # the signal arrives while the finaliser runs
        deadline = time.monotonic() + 0.05
        while time.monotonic() < deadline:
            pass

restore = interrupt.install()
try:
    obj = Finalised()
    del obj  # its KeyboardInterrupt is swallowed here
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        time.sleep(0.01)
    print("not raised again")
except KeyboardInterrupt:
    interrupt.disarm()
    print("raised again")
finally:
    restore()
"""


def test_an_interrupt_lost_in_a_finaliser_is_raised_again() -> None:
    """Ctrl-C that lands in a ``__del__`` is swallowed by Python ("Exception ignored"); the CLI's handler
    raises it again where it propagates, and the lost one prints nothing. In a process of its own: a signal sent
    to the test runner's own process would reach every native thread earlier tests left in it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", FINALISER_SCRIPT], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "raised again", done.stdout + done.stderr
    assert "KeyboardInterrupt" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
