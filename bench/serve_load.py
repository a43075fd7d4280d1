"""Load on ``sentcl serve``: served sentences per second against the in-process ``encode`` of the same model.

The service runs as ``sentcl serve`` in a child process on 127.0.0.1 (a free port). ``--clients`` concurrent
clients (asyncio, keep-alive; ``bench.http_load``'s lean client, or ``--client httpx``) send ``--requests``
POST /embed requests of 1–8 sentences each (seeded), with a time cap per round; throughput counts the
sentences of successful answers (the lean client checks each holds its vectors) over the wall time. One
untimed round of each side comes first. The in-process figure encodes the same sentences with
``encode(..., batch_size=--batch-size)`` in this process with the same thread count while the service idles.
The two alternate per round (rotating who goes first) and the figures are medians. ``--soak-seconds S``
then keeps the load on for S seconds and samples the service's resident memory (VmRSS) every ``--rss-every``
seconds.

    python -m bench.serve_load --rounds 3 --requests 300                  # from the repository root
    python -m bench.serve_load --rounds 1 --soak-seconds 300 --rss-every 30
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from bench import harness, http_load
from bench.common import format_table, median, read_sentences, rss_mb, set_threads, write_json
from sentcl.files.paths import data_file, resolve_data_dir

ROOT = Path(__file__).resolve().parent.parent


def add_load_options(parser: argparse.ArgumentParser) -> None:
    """The load's shape (``load_requests``, the service's passes), shared with ``bench.serve_passes``, which
    replays the passes of the same requests."""
    parser.add_argument("--pooler", default="avg", help="all-MiniLM-L6-v2 was trained with mean pooling")
    parser.add_argument("--clients", type=int, default=16, help="requests in flight")
    parser.add_argument("--min-sentences", type=int, default=1)
    parser.add_argument("--max-sentences", type=int, default=8)
    parser.add_argument("--requests", type=int, default=300, help="requests per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve-batch-size", type=int, default=16, help="the service's --batch-size")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--data-dir", default=None)
    add_load_options(parser)
    parser.add_argument("--time-cap", type=float, default=120.0, help="seconds per load round at most")
    parser.add_argument("--batch-size", type=int, default=64, help="in-process batch")
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="the service's --workers (default: the service's, 1 a thread)",
    )
    parser.add_argument("--max-length", type=int, default=128, help="truncation on both sides")
    parser.add_argument("--max-wait-ms", type=float, default=5.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--client",
        choices=("lean", "httpx"),
        default="lean",
        help="the load client: bench.http_load (a few tenths of a ms of CPU a request) or httpx (about 1.8 ms)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--soak-seconds", type=float, default=0.0, help="0: no soak")
    parser.add_argument("--rss-every", type=float, default=30.0)
    parser.add_argument(
        "--keep-malloc-threshold", action="store_true", help="the service's option of that name"
    )
    parser.add_argument(
        "--release-budget-mb",
        type=int,
        default=None,
        help="the service's option of that name (default: its own)",
    )
    parser.add_argument("--start-timeout", type=float, default=180.0)
    parser.add_argument("--output", default="bench/results/serve_load.json")
    return parser.parse_args(argv)


def load_requests(args: argparse.Namespace) -> list[list[str]]:
    """The round's requests: ``--requests`` seeded samples of ``--min-sentences`` to ``--max-sentences``
    corpus sentences each."""
    rng = random.Random(args.seed)
    pool = read_sentences(data_file(resolve_data_dir(args.data_dir), "corpora", "wiki1m_prefix.txt"))
    return [
        rng.sample(pool, rng.randint(args.min_sentences, args.max_sentences)) for _ in range(args.requests)
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """CPU seconds a process (all its threads) has used so far, from its CPU-time clock (Linux's
    ``clock_gettime`` on the clock id ``(~pid << 3) | CPUCLOCK_SCHED``, in nanoseconds); /proc/PID/stat's
    utime + stime, in 10 ms ticks that a short round of a small model can fall inside, where that clock cannot
    be read."""
    try:
        return time.clock_gettime(((~pid) << 3) | 2)
    except OSError:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()  # after "(comm)": state is field 3
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


def start_service(args: argparse.Namespace, port: int) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "sentcl.cli",
        "serve",
        args.model,
        "--pooler",
        args.pooler,
        "--port",
        str(port),
    ]
    cmd += ["--batch-size", str(args.serve_batch_size), "--max-length", str(args.max_length)]
    cmd += ["--max-wait-ms", str(args.max_wait_ms), "--max-client-batch", str(args.max_sentences)]
    cmd += ["--max-queue", str(args.clients * args.max_sentences * 2), "--auto-truncate"]
    cmd += ["--keep-malloc-threshold"] if args.keep_malloc_threshold else []
    cmd += ["--release-budget-mb", str(args.release_budget_mb)] if args.release_budget_mb else []
    cmd += ["--workers", str(args.workers)] if args.workers else []
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "TOKENIZERS_PARALLELISM": "false"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + args.start_timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"sentcl serve exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}"
            )  # type: ignore[union-attr]
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"sentcl serve did not become healthy in {args.start_timeout} s")


async def drive(
    url: str, requests: list[list[str]], clients: int, time_cap: float, cycle: bool, client: str = "lean"
) -> dict[str, Any]:
    """``clients`` tasks send the requests (each once, or round and round when ``cycle``) until done or
    the time cap, on ``client`` (``lean``: ``bench.http_load``, the answer's vectors counted; ``httpx``);
    per request: latency, status, sentences."""
    latencies: list[float] = []
    errors: dict[str, int] = {}
    sentences = 0
    next_id = 0
    deadline = time.monotonic() + time_cap
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    address = httpx.URL(url)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as shared:

        async def worker() -> None:
            nonlocal next_id, sentences
            own = http_load.Connection(address.host, address.port or 80, timeout=60)
            try:
                while time.monotonic() < deadline and (cycle or next_id < len(requests)):
                    batch = requests[next_id % len(requests)]
                    next_id += 1
                    start = time.perf_counter()
                    payload = {"inputs": batch, "normalize": False}
                    try:
                        if client == "httpx":
                            status = str((await shared.post("/embed", json=payload)).status_code)
                        else:
                            code, body = await own.post_json("/embed", payload)
                            status = str(code)
                            if code == 200:
                                http_load.check_embeddings(body, len(batch))
                    except (httpx.HTTPError, http_load.HttpError, OSError, TimeoutError) as err:
                        status = type(err).__name__
                    if status == "200":
                        latencies.append(time.perf_counter() - start)
                        sentences += len(batch)
                    else:
                        errors[status] = errors.get(status, 0) + 1
            finally:
                await own.close()

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        wall = time.perf_counter() - start
    return {
        "requests_ok": len(latencies),
        "errors": errors,
        "sentences": sentences,
        "wall_s": wall,
        "sentences_per_s": sentences / wall,
        **http_load.latency_percentiles(latencies),
        "capped": time.monotonic() >= deadline,
    }


def in_process(encoder: Any, sentences: list[str], args: argparse.Namespace) -> dict[str, float]:
    start = time.perf_counter()
    encoder.encode(sentences, batch_size=args.batch_size, max_length=args.max_length)
    wall = time.perf_counter() - start
    return {"sentences": len(sentences), "wall_s": wall, "sentences_per_s": len(sentences) / wall}


def soak(url: str, pid: int, requests: list[list[str]], args: argparse.Namespace) -> dict[str, Any]:
    """The load for ``--soak-seconds`` while a thread samples the service's RSS every ``--rss-every`` s."""
    import threading

    samples: list[tuple[float, float]] = [(0.0, rss_mb(pid))]
    stop = threading.Event()
    start = time.monotonic()

    def sample() -> None:
        while not stop.wait(args.rss_every):
            samples.append((round(time.monotonic() - start, 1), rss_mb(pid)))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    load = asyncio.run(drive(url, requests, args.clients, args.soak_seconds, True, args.client))
    stop.set()
    thread.join(timeout=5)
    samples.append((round(time.monotonic() - start, 1), rss_mb(pid)))
    rss = [mb for _, mb in samples]
    return {"rss_mb": samples, "growth_mb": rss[-1] - rss[0], "max_over_start_mb": max(rss) - rss[0], **load}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    set_threads(args.threads)
    from sentcl.modeling.open import open_model

    requests = load_requests(args)
    flat = [s for r in requests for s in r]
    encoder = open_model(args.model, pooler=args.pooler)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_service(args, port)
    res: dict[str, Any] = {
        **harness.header("serve_load", args, args.threads, argv=argv),
        "settings": {k: v for k, v in vars(args).items() if k != "output"},
    }
    try:
        # one untimed round of each side first, so that both are measured in their steady state: the service's
        # first round after start-up also grows its malloc arenas, and ran below the later rounds
        in_process(encoder, flat, args)
        asyncio.run(drive(url, requests, args.clients, args.time_cap, False, args.client))
        rounds: list[dict[str, Any]] = []
        for r in range(args.rounds):
            row: dict[str, Any] = {}
            for mode in ("in_process", "serve") if r % 2 == 0 else ("serve", "in_process"):
                server_cpu, own_cpu = cpu_seconds(proc.pid), time.process_time()
                if mode == "serve":
                    row[mode] = asyncio.run(
                        drive(url, requests, args.clients, args.time_cap, False, args.client)
                    )
                    row[mode]["server_cpu_s"] = cpu_seconds(proc.pid) - server_cpu
                    row[mode]["client_cpu_s"] = time.process_time() - own_cpu
                    cpu = row[mode]["server_cpu_s"] + row[mode]["client_cpu_s"]
                else:
                    row[mode] = in_process(encoder, flat, args)
                    cpu = row[mode]["cpu_s"] = time.process_time() - own_cpu
                row[mode]["sentences_per_cpu_s"] = row[mode]["sentences"] / cpu
            row["ratio"] = row["serve"]["sentences_per_s"] / row["in_process"]["sentences_per_s"]
            # per CPU-second (server + client processes): insensitive to the CPU share other jobs leave
            row["cpu_ratio"] = row["serve"]["sentences_per_cpu_s"] / row["in_process"]["sentences_per_cpu_s"]
            rounds.append(row)
            print(
                f"round {r + 1}/{args.rounds}: ratio {row['ratio']:.3f}, per CPU-s {row['cpu_ratio']:.3f}",
                flush=True,
            )
        res["rounds"] = rounds
        errors = sum(sum(row["serve"]["errors"].values()) for row in rounds)
        res["summary"] = {
            "serve_sentences_per_s": median([row["serve"]["sentences_per_s"] for row in rounds]),
            "p50_ms": median([row["serve"]["p50_ms"] for row in rounds]),
            "p99_ms": median([row["serve"]["p99_ms"] for row in rounds]),
            "errors": errors,
            "in_process_sentences_per_s": median([row["in_process"]["sentences_per_s"] for row in rounds]),
            "ratio_median": median([row["ratio"] for row in rounds]),
            "cpu_ratio_median": median([row["cpu_ratio"] for row in rounds]),
        }
        res["targets"] = {
            "serve>=0.85x_in_process_zero_errors": res["summary"]["ratio_median"] >= 0.85 and not errors
        }
        if args.soak_seconds > 0:
            res["soak"] = soak(url, proc.pid, requests, args)
            res["targets"]["soak_rss_growth<50MB"] = res["soak"]["max_over_start_mb"] < 50
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    s = res["summary"]
    print(
        format_table(
            ["served sent/s", "p50 ms", "p99 ms", "errors", "in-process sent/s", "ratio", "ratio per CPU-s"],
            [
                [
                    s["serve_sentences_per_s"],
                    s["p50_ms"],
                    s["p99_ms"],
                    s["errors"],
                    s["in_process_sentences_per_s"],
                    s["ratio_median"],
                    s["cpu_ratio_median"],
                ]
            ],
        )
    )
    if "soak" in res:
        print("soak RSS (s, MiB):", ", ".join(f"{t:g}: {mb:.0f}" for t, mb in res["soak"]["rss_mb"]))
    print("wrote", write_json(args.output, res))
    return res


if __name__ == "__main__":
    main()
