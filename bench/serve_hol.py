"""Head-of-line blocking: a tiny /embed request's latency while six concurrent
~1.9 MB inputs with ``"truncate": true`` are in flight, against ``sentcl serve`` as a real process.

    PYTHONPATH=src python -m bench.serve_hol [--model all-MiniLM-L6-v2] [--json out.json]

Prints the tiny request's latency alone (median of 5) and during the six big requests, each big request's
time, and the service's resident memory before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from bench.common import rss_mb

WIKI = Path(os.environ.get("SENTCL_DATA", "../shared/data")) / "corpora" / "wiki1m_prefix.txt"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def big_text(size: int) -> str:
    lines = WIKI.read_text(encoding="utf-8").splitlines()[:2000]
    text = " ".join(lines)
    return (text * (size // len(text) + 1))[:size]


def tiny_latency(url: str) -> float:
    start = time.perf_counter()
    resp = httpx.post(f"{url}/embed", json={"inputs": ["a dog"]}, timeout=300)
    assert resp.status_code == 200, resp.text
    return time.perf_counter() - start


def measure(url: str, pid: int, size: int) -> dict[str, float | list[float]]:
    httpx.post(f"{url}/embed", json={"inputs": ["warm up"]}, timeout=300)
    alone = statistics.median(tiny_latency(url) for _ in range(5))
    texts = [big_text(size)[i:] + " end" for i in range(6)]
    rss_before = rss_mb(pid)

    def big(text: str) -> float:
        start = time.perf_counter()
        resp = httpx.post(f"{url}/embed", json={"inputs": [text], "truncate": True}, timeout=300)
        assert resp.status_code == 200, resp.text[:200]
        return time.perf_counter() - start

    with ThreadPoolExecutor(6) as pool:
        bigs = [pool.submit(big, t) for t in texts]
        time.sleep(0.5)  # the six bodies are in
        during = tiny_latency(url)
        big_s = [f.result() for f in bigs]
    return {"tiny_alone_s": alone, "tiny_during_s": during, "big_s": big_s, "rss_before_mb": rss_before,
            "rss_after_mb": rss_mb(pid)}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--size", type=int, default=1_900_000, help="characters per big input")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    port = free_port()
    cmd = [sys.executable, "-m", "sentcl.cli", "serve", args.model, "--port", str(port)]
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None, "the service did not start"
            time.sleep(0.5)
        result = measure(url, proc.pid, args.size)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    result["load_average"] = os.getloadavg()[0]
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
