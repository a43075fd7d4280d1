"""Served search: ``sentcl serve --index STORE`` (LanceDB) against ``sentcl serve --index FAISS`` at 16 clients.

The first ``--sentences`` lines of wiki1m_prefix are encoded once into shards (``sentcl encode --shard-size``,
cached under ``--work``), then indexed twice from the same shards: a faiss folder (``sentcl index build``, the
given ``--faiss-type``, tuned to recall@10 0.95) and a store (``sentcl index build --store``, ``--store-type``,
tuned likewise). Both services run side by side on 127.0.0.1, same model, threads and batching; ``--clients``
concurrent clients (``bench.http_load``'s lean keep-alive client) send POST /search ``{"query", "k": 10}`` with
queries drawn (seeded) from the STS-B test sentences, for ``--requests`` requests or ``--time-cap`` seconds a
round. One untimed round of each first; then the two alternate round by round (rotating who goes first) and
the figures are medians. The machine is shared: the load average is recorded at start and end.

    python -m bench.serve_search --sentences 2000 --rounds 3 --output bench/results/serve_search.json
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

from bench import http_load
from bench.common import format_table, machine_info, median, read_sentences, write_json
from bench.index_corpus import stsb_test_sentences
from bench.serve_load import free_port
from sentcl.files.paths import data_file, resolve_data_dir

ROOT = Path(__file__).resolve().parent.parent


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="all-MiniLM-L6-v2")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--sentences", type=int, default=2000)
    p.add_argument("--faiss-type", default="ivf")
    p.add_argument("--store-type", default="ivf")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--requests", type=int, default=400, help="requests a round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--time-cap", type=float, default=90.0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--work", default="runs/bench-serve-search")
    p.add_argument("--output", default="bench/results/serve_search.json")
    return p.parse_args(argv)


def sentcl(*argv: str, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-m", "sentcl.cli", *argv], check=True, env=env)


def prepare(args: argparse.Namespace, env: dict[str, str]) -> dict[str, Path]:
    """The shards, the faiss folder and the store (each made once, reused by a later run)."""
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    corpus, emb = work / "corpus.txt", work / "emb"
    lines = read_sentences(data_file(resolve_data_dir(args.data_dir), "corpora", "wiki1m_prefix.txt"))
    if not corpus.is_file():
        corpus.write_text("".join(s + "\n" for s in lines[: args.sentences]), encoding="utf-8")
    if not (emb / "manifest.json").is_file():
        sentcl("encode", "--model", args.model, "--input", str(corpus), "--output", str(emb),
               "--shard-size", "1000", env=env)  # fmt: skip
    faiss_dir, store = work / f"faiss-{args.faiss_type}", work / f"store-{args.store_type}"
    if not (faiss_dir / "index.json").is_file():
        sentcl("index", "build", "--embeddings", str(emb), "--type", args.faiss_type, "--output",
               str(faiss_dir), env=env)  # fmt: skip
    if not store.is_dir():
        sentcl("index", "build", "--embeddings", str(emb), "--store", str(store), "--type", args.store_type,
               env=env)  # fmt: skip
    return {"faiss": faiss_dir, "store": store}


def start(args: argparse.Namespace, index: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "sentcl.cli",
        "serve",
        args.model,
        "--index",
        str(index),
        "--port",
        str(port),
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sentcl serve exited: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise RuntimeError("sentcl serve did not become healthy in 300 s")


async def drive(url: str, queries: list[str], clients: int, time_cap: float) -> dict[str, Any]:
    """``clients`` connections send the queries (each once) until done or the time cap."""
    latencies: list[float] = []
    errors: dict[str, int] = {}
    next_id, deadline = 0, time.monotonic() + time_cap
    address = httpx.URL(url)

    async def worker() -> None:
        nonlocal next_id
        own = http_load.Connection(address.host, address.port or 80, timeout=60)
        try:
            while time.monotonic() < deadline and next_id < len(queries):
                query = queries[next_id]
                next_id += 1
                start = time.perf_counter()
                try:
                    code, body = await own.post_json("/search", {"query": query, "k": 10})
                    hits = orjson.loads(body) if code == 200 else None  # the query's list of hits
                    status = (
                        "200" if isinstance(hits, list) and len(hits) == 10 else f"{code} or a bad answer"
                    )
                except (http_load.HttpError, OSError, TimeoutError) as err:
                    status = type(err).__name__
                if status == "200":
                    latencies.append(time.perf_counter() - start)
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
        "qps": len(latencies) / wall,
        **http_load.latency_percentiles(latencies),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    head = {
        "benchmark": "serve_search",
        "command": "python -m bench.serve_search " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine_info(args.threads),
        "config": vars(args),
    }
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "TOKENIZERS_PARALLELISM": "false"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    indexes = prepare(args, env)
    pool = stsb_test_sentences(resolve_data_dir(args.data_dir))
    rng = random.Random(0)
    services = {name: start(args, path, env) for name, path in indexes.items()}
    rounds: list[dict[str, Any]] = []
    try:
        for _, url in services.values():  # untimed warm-up
            asyncio.run(drive(url, rng.sample(pool, args.clients * 4), args.clients, args.time_cap))
        for r in range(args.rounds):
            order = list(services) if r % 2 == 0 else list(services)[::-1]
            row: dict[str, Any] = {"round": r, "order": order}
            for name in order:
                queries = rng.sample(pool, args.requests)
                row[name] = asyncio.run(drive(services[name][1], queries, args.clients, args.time_cap))
                print(f"round {r} {name}: {row[name]['qps']:.1f} queries/s", file=sys.stderr, flush=True)
            row["ratio"] = row["store"]["qps"] / row["faiss"]["qps"]
            rounds.append(row)
    finally:
        for proc, _ in services.values():
            proc.terminate()
            proc.wait(timeout=30)
    summary = {
        "faiss_qps": median([r["faiss"]["qps"] for r in rounds]),
        "store_qps": median([r["store"]["qps"] for r in rounds]),
        "ratio_median": median([r["ratio"] for r in rounds]),
        "faiss_p50_ms": median([r["faiss"]["p50_ms"] for r in rounds]),
        "store_p50_ms": median([r["store"]["p50_ms"] for r in rounds]),
        "errors": sum(sum(r[n]["errors"].values()) for r in rounds for n in ("faiss", "store")),
    }
    result = {
        **head,
        "indexes": {k: str(v) for k, v in indexes.items()},
        "rounds": rounds,
        "summary": summary,
    }
    write_json(args.output, result)
    print(format_table(["", "faiss", "store"], [["QPS (median)", summary["faiss_qps"], summary["store_qps"]],
                                               ["p50 ms", summary["faiss_p50_ms"], summary["store_p50_ms"]]]))  # fmt: skip
    print(f"store / faiss: {summary['ratio_median']:.3f} (median of {len(rounds)} rounds)")
    return result


if __name__ == "__main__":
    main()
