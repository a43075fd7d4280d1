"""Peak memory of GradCache: a batch of 512 in chunks of 64 against a plain batch of 64 (and of 512).

Every configuration runs in a fresh process (peak resident memory, ru_maxrss, is per process): load the
model, take a few sentcl training steps, report the peak. Target: GradCache at 512 needs at most 1.3× the
peak of the plain batch of 64.

    python -m bench.memory_gradcache                        # from the repository root
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import torch

from bench import harness
from bench.common import (
    PeakRSS,
    format_table,
    max_rss_mb,
    median,
    rss_mb,
    set_threads,
    worker_env,
)
from bench.sides import SentclSide

# (name, batch size, gradient-cache chunk or None)
DEFAULT_CONFIGS = "plain-64:64:0,gradcache-512:512:64,plain-512:512:0"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = harness.parser(__doc__, "memory_gradcache", batch_size=None)
    parser.add_argument("--configs", default=DEFAULT_CONFIGS, help="name:batch:chunk,... (chunk 0: no cache)")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument(
        "--allocators",
        default="glibc,mmap128k",
        help="glibc: the default malloc; mmap128k: MALLOC_MMAP_THRESHOLD_=131072 (large tensors are mmapped "
        "and go back to the system when freed, so RSS follows the memory in use); mallopt: the same set "
        "at run time by sentcl.training.allocator, as the training loop does with gradient caching",
    )
    return parser.parse_args(argv)


def _configs(text: str) -> list[tuple[str, int, int]]:
    out = []
    for item in text.split(","):
        name, batch, chunk = item.split(":")
        out.append((name, int(batch), int(chunk)))
    return out


def worker(args: argparse.Namespace) -> dict[str, Any]:
    name, batch, chunk = _configs(args.worker)[0]
    if os.environ.get("SENTCL_BENCH_MALLOPT"):
        from sentcl.training.allocator import fix_mmap_threshold

        if not fix_mmap_threshold():
            raise RuntimeError("allocator 'mallopt' needs glibc")
    set_threads(args.threads)
    torch.manual_seed(args.seed)
    data, _ = harness.corpus_batches(args.corpus, args.data_dir, args.seed, batch, args.steps)
    side = SentclSide(args.model, args.max_length, 3e-5, args.steps, gradcache_chunk=chunk or None)
    loaded = rss_mb()
    times, losses = [], []
    with PeakRSS() as peak:
        for sentences in data:
            start = time.perf_counter()
            losses.append(side.step(sentences))
            times.append(time.perf_counter() - start)
    return {
        "name": name,
        "batch_size": batch,
        "chunk": chunk or None,
        "rss_after_load_mb": loaded,
        "peak_rss_mb": max(max_rss_mb(), peak.peak),
        "step_peak_over_loaded_mb": peak.peak - loaded,
        "s_per_step": median(times),
        "sentences_per_s": batch / median(times),
        "loss": losses,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    head = harness.header("memory_gradcache", args, args.threads)  # the machine and its load at the start
    names = ("model", "corpus", "data_dir", "steps", "max_length", "threads", "seed")
    rows = {}
    allocators = [a.strip() for a in args.allocators.split(",") if a.strip()]
    for (name, batch, chunk), allocator in [(c, a) for a in allocators for c in _configs(args.configs)]:
        env = worker_env(harness.ROOT, allocator)
        options = harness.options_of(args, *names)
        out = harness.spawn_worker("bench.memory_gradcache", f"{name}:{batch}:{chunk}", options, env)
        key = f"{name}@{allocator}"
        rows[key] = {**out, "allocator": allocator}
        print(f"{key}: peak {rows[key]['peak_rss_mb']:.0f} MB, {rows[key]['s_per_step']:.2f} s/step")
    targets: dict[str, Any] = {}
    for allocator in allocators:
        small, large = rows.get(f"plain-64@{allocator}"), rows.get(f"gradcache-512@{allocator}")
        if small and large:
            ratio = large["peak_rss_mb"] / small["peak_rss_mb"]
            targets[f"gradcache512_over_plain64_peak@{allocator}"] = ratio
            targets[f"gradcache512_peak<=1.3x_plain64@{allocator}"] = ratio <= 1.3
    return {
        **head,
        "runs": rows,
        "targets": targets,
    }


def report(res: dict[str, Any]) -> str:
    headers = ["config", "batch", "chunk", "peak RSS MB", "step peak over loaded MB", "s/step", "sent/s"]
    rows = [
        [
            n,
            r["batch_size"],
            r["chunk"] or "-",
            r["peak_rss_mb"],
            r["step_peak_over_loaded_mb"],
            r["s_per_step"],
            r["sentences_per_s"],
        ]
        for n, r in res["runs"].items()
    ]
    return format_table(headers, rows) + "\n" + json.dumps(res["targets"])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return harness.main(argv, parse_args, run, report, worker)


if __name__ == "__main__":
    main()
