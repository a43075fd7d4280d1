"""``sentcl serve`` as a real process: it binds before loading the model, so a busy port ends at once with
exit status 2 and one line (before the model is even looked for), and ``--port 0`` logs the port it got; the
key from ``$SENTCL_API_KEY`` works and stays out of the process's command line; on a plain Hugging Face folder
that sentcl did not save, real clients get transformers' own vectors (with the memory budget; with two workers,
both ways of counting tokens and a small pool shared)."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest
import torch

SENTCL = [sys.executable, "-m", "sentcl.cli"]


def env(**extra: str) -> dict[str, str]:
    src = str(Path(__file__).parents[2] / "src")
    return {**os.environ, "PYTHONPATH": src, "OMP_NUM_THREADS": "1", **extra}


@pytest.mark.slow
def test_busy_port_exits_2_before_loading(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        missing = tmp_path / "no-such-model"  # were the model looked for first, the error would name it
        start = time.monotonic()
        done = subprocess.run(
            [*SENTCL, "serve", str(missing), "--port", str(port)],
            capture_output=True,
            text=True,
            env=env(),
            timeout=120,
        )
        seconds = time.monotonic() - start
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [
        f"sentcl serve: error: cannot listen on 127.0.0.1:{port}: the address is already in use: another "
        "process listens there (pick another --port, or 0 for a free one)"
    ], done.stderr
    assert "serving" not in done.stderr and str(missing) not in done.stderr
    print(f"busy port: exit 2 after {seconds:.1f} s (interpreter start and imports included)")


def test_port_0_logs_the_real_port_and_the_key_stays_out_of_argv(tiny_bert: Path) -> None:
    key = "s3cret-key-123"
    argv = [*SENTCL, "serve", str(tiny_bert), "--port", "0", "--keep-malloc-threshold"]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env(SENTCL_API_KEY=key))
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()  # type: ignore[union-attr]
    try:
        seen, deadline, url = [], time.monotonic() + 120, None
        while url is None:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            seen.append(line)
            if line.startswith("INFO sentcl: serving "):
                url = line.split(" on ", 1)[1].split(" ", 1)[0]
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        assert url == f"http://127.0.0.1:{port}/" and port != 0, seen
        assert any(line.startswith(f"INFO sentcl: bound {url}; loading") for line in seen), seen
        assert httpx.get(url + "health", timeout=10).status_code == 200
        assert httpx.post(url + "embed", json={"inputs": "a dog"}, timeout=10).status_code == 401
        auth = {"Authorization": f"Bearer {key}"}
        assert (
            httpx.post(url + "embed", json={"inputs": "a dog"}, headers=auth, timeout=10).status_code == 200
        )
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        assert key.encode() not in cmdline and b"serve" in cmdline
        assert not [line for line in seen if "process list" in line]  # no argv warning for the env key
    finally:
        proc.send_signal(signal.SIGTERM)
        # uvicorn drains, then re-raises the signal it caught: killed by SIGTERM, after a clean shutdown
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)


@contextlib.contextmanager
def serving(*options: str, model: Path) -> Iterator[str]:
    """A real ``sentcl serve`` process on ``model`` at a free port, with ``options``: its URL, from its log line;
    SIGTERM after, and a clean exit checked."""
    argv = [*SENTCL, "serve", str(model), "--pooler", "avg", "--port", "0", *options]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env())
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()  # type: ignore[union-attr]
    try:
        url, deadline = None, time.monotonic() + 120
        while url is None:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if line.startswith("INFO sentcl: serving "):
                url = line.split(" on ", 1)[1].split(" ", 1)[0]
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)


def mean_pooled(folder: Path, batches: list[list[str]]) -> list[np.ndarray]:
    """Each batch's embeddings (n, H) by transformers' own BertModel, its last layer mean-pooled here by hand."""
    from transformers import AutoTokenizer, BertModel

    tokenizer, model = AutoTokenizer.from_pretrained(folder), BertModel.from_pretrained(folder).eval()
    out = []
    for batch in batches:
        enc = tokenizer(batch, padding=True, return_tensors="pt")
        with torch.no_grad():
            h = model(**enc).last_hidden_state  # (n, L, H)
        mask = enc["attention_mask"][..., None].float()  # (n, L, 1)
        out.append(((h * mask).sum(1) / mask.sum(1)).numpy())  # (n, H)
    return out


def embed(client: httpx.Client, batch: list[str]) -> np.ndarray:
    answer = client.post("/embed", json={"inputs": batch, "normalize": False})
    assert answer.status_code == 200, answer.text
    return np.array(answer.json(), dtype=np.float32)  # (n, D)


@pytest.mark.slow
def test_release_budget_serves_a_plain_hf_folder_to_a_real_client(tiny_bert: Path) -> None:
    """``--release-budget-mb 1`` (the smallest budget: free memory handed back whenever the resident set grew by
    1 MiB) in a real process, on a plain Hugging Face folder that sentcl did not save: httpx's answers equal the
    mean-pooled last layer of transformers' own BertModel, computed here by hand. (That the budget fires is
    checked in process, tests/serve/test_serve_cli.py; from outside only the answers can be.)"""
    texts = [["a dog", "the cat sits on the mat"], ["a man plays music"], ["the dog runs", "a cat", "music"]]
    with (
        serving("--release-budget-mb", "1", model=tiny_bert) as url,
        httpx.Client(base_url=url, timeout=30) as c,
    ):
        served = [embed(c, batch) for _ in range(10) for batch in texts]
    for got, expected in zip(served, mean_pooled(tiny_bert, texts * 10), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def metric(client: httpx.Client, name: str) -> float:
    line = next(x for x in client.get("/metrics").text.splitlines() if x.startswith(name + " "))
    return float(line.split()[1])


@pytest.mark.slow
def test_two_workers_both_counting_paths_and_a_shared_pool_on_a_plain_hf_folder(tiny_bert: Path) -> None:
    """Two encode workers in a real process on a plain Hugging Face folder, real httpx clients in 6 threads:
    small requests (their tokens counted on the event loop) and large ones of over INLINE_COUNT_CHARS characters
    (counted in the counting thread) at once each get BertModel's own mean-pooled vectors; then a lone request
    of 8 sentences on the idle service is encoded as two passes of 4, one a worker."""
    from sentcl.serve.text import INLINE_COUNT_CHARS

    words = ["a dog", "the cat sits on the mat", "a man plays music", "the dog runs", "music", "a cat"]
    small = [words[i : i + 1 + i % 3] for i in range(len(words))]
    large = [[f"{words[i % 6]} and {words[(i + k) % 6]} number {i}" for i in range(90)] for k in (1, 2)]
    assert all(sum(map(len, batch)) > INLINE_COUNT_CHARS for batch in large)
    batches = (small + large) * 3
    lone = [f"{w} again" for w in words] + ["one more", "the last"]
    options = ("--workers", "2", "--threads", "2", "--max-client-batch", "100", "--max-wait-ms", "20")
    with serving(*options, model=tiny_bert) as url, httpx.Client(base_url=url, timeout=60) as c:
        with ThreadPoolExecutor(6) as pool:
            served = list(pool.map(lambda batch: embed(c, batch), batches))
        passes, sentences = metric(c, "sentcl_batch_sentences_count"), metric(c, "sentcl_batch_sentences_sum")
        alone = embed(c, lone)
        passes, sentences = (
            metric(c, "sentcl_batch_sentences_count") - passes,
            metric(c, "sentcl_batch_sentences_sum") - sentences,
        )
    for got, expected in zip([*served, alone], mean_pooled(tiny_bert, [*batches, lone]), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    assert (passes, sentences) == (2, 8)  # both free workers took a share of 4
