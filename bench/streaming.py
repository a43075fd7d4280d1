"""Streaming corpora: train on a 1,000,000-line file without loading it, tokenised once and cached.

A generated corpus (the wiki prefix's lines, cycled with a running number so that every line differs)
is indexed and tokenised once into the cache; then fresh processes each take a few sentcl training
steps with the loop's sampler (seeded permutation, batches) and report their resident memory:

* ``memory-small``: the in-memory ``lines`` reader on the 11,913-line prefix (the baseline);
* ``stream-small`` / ``stream-large``: the streaming corpus (pread + cached token ids) on the prefix and
  on the generated file; ``memory-large``: the in-memory reader on the generated file, for reference.

Target: ``stream-large`` peaks less than 200 MB above ``memory-small``. Also timed: building the caches
(first open) against reopening them, and collating a batch with the tokenizer against the token cache.

    python -m bench.streaming --lines 1000000                 # from the repository root
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from transformers import AutoTokenizer

from bench import harness
from bench.common import (
    PeakRSS,
    format_table,
    max_rss_mb,
    median,
    read_sentences,
    rss_mb,
    set_threads,
)
from bench.sides import SentclSide
from sentcl.data.readers import read_lines
from sentcl.data.sampler import batches, epoch_permutation
from sentcl.data.streaming import LineFile, StreamingCorpus, collate_cached
from sentcl.files.paths import data_file, resolve_data_dir, resolve_model_path

RUNS = ("memory-small", "stream-small", "stream-large", "memory-large")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = harness.parser(__doc__, "streaming", corpus=False)
    parser.add_argument("--lines", type=int, default=1_000_000, help="lines of the generated corpus")
    parser.add_argument("--runs", default=",".join(RUNS))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument(
        "--workdir", default=None, help="where the generated corpus and caches go (default: temp)"
    )
    parser.add_argument("--corpus-file", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--cache-dir", default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def generate_corpus(source: Path, target: Path, lines: int) -> Path:
    """``lines`` lines: the source's non-empty lines cycled, each prefixed with its number (all distinct)."""
    base = read_sentences(source)
    with open(target, "w", encoding="utf-8") as out:
        for i in range(lines):
            out.write(f"{i} {base[i % len(base)]}\n")
    return target


def worker(args: argparse.Namespace) -> dict[str, Any]:
    """One fresh process: open the corpus as the run says, take a few training steps, report memory."""
    set_threads(args.threads)
    torch.manual_seed(args.seed)
    start_rss = rss_mb()
    side = SentclSide(args.model, args.max_length, 3e-5, args.steps)
    loaded_model = rss_mb()
    streaming = args.worker.startswith("stream")
    start = time.perf_counter()
    if streaming:
        corpus = StreamingCorpus(args.corpus_file, cache_dir=args.cache_dir)
        corpus.tokenize(side.model.tokenizer, args.max_length)
        assert not corpus.examples.built_index and not corpus.examples.built_tokens, "cache was not reused"
    else:
        corpus = read_lines(args.corpus_file)
    open_s = time.perf_counter() - start
    order = batches(epoch_permutation(len(corpus), args.seed, 0), args.batch_size)  # the loop's sampler
    loaded_data = rss_mb()
    times, collate_s = [], []
    with PeakRSS() as peak:
        for index in order[: args.steps]:
            start = time.perf_counter()
            if streaming:
                batch = collate_cached(corpus, index, side.method.num_views, side.model.tokenizer)
            else:
                batch = side.tokenize([corpus.examples[i] for i in index])
            collate_s.append(time.perf_counter() - start)
            side.step_batch(batch, len(index))
            times.append(time.perf_counter() - start)
    return {
        "run": args.worker,
        "examples": len(corpus),
        "open_s": open_s,
        "rss_start_mb": start_rss,
        "rss_model_loaded_mb": loaded_model,
        "rss_data_loaded_mb": loaded_data,
        "data_mb": loaded_data - loaded_model,
        "peak_rss_mb": max(max_rss_mb(), peak.peak),
        "s_per_step": median(times),
        "collate_ms": 1000 * median(collate_s),
    }


def _spawn(args: argparse.Namespace, run: str, corpus: Path, cache: Path) -> dict[str, Any]:
    options = harness.options_of(args, "model", "steps", "batch_size", "max_length", "threads", "seed")
    return harness.spawn_worker(
        "bench.streaming", run, {**options, "corpus_file": corpus, "cache_dir": cache}
    )


def _build_caches(path: Path, cache: Path, tokenizer: Any, max_length: int) -> dict[str, float]:
    """Time the first open (index + tokens built) against a second open (both reused)."""
    times = {}
    for label in ("first_open_s", "second_open_s"):
        start = time.perf_counter()
        with PeakRSS() as peak:
            lines = LineFile(path, cache)
            lines.tokenize(tokenizer, max_length)
        times[label] = time.perf_counter() - start
        times[label.replace("_s", "_rss_growth_mb")] = peak.peak - peak.start
        lines.close()
    return times


def run(args: argparse.Namespace) -> dict[str, Any]:
    set_threads(args.threads)
    head = harness.header("streaming", args, args.threads, skip=("corpus_file", "cache_dir"))
    data_dir = resolve_data_dir(args.data_dir)
    small = data_file(data_dir, "corpora", "wiki1m_prefix.txt")
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="sentcl-bench-stream-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        start = time.perf_counter()
        large = generate_corpus(small, workdir / f"generated_{args.lines}.txt", args.lines)
        generate_s = time.perf_counter() - start
        cache = workdir / "cache"
        tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(args.model))
        caches = {
            "small": _build_caches(small, cache, tokenizer, args.max_length),
            "large": _build_caches(large, cache, tokenizer, args.max_length),
        }
        print("caches:", json.dumps(caches))
        runs = {}
        for name in [r.strip() for r in args.runs.split(",") if r.strip()]:
            runs[name] = _spawn(args, name, large if name.endswith("large") else small, cache)
            print(f"{name}: {runs[name]['examples']} examples, peak {runs[name]['peak_rss_mb']:.0f} MB")
        size_mb = large.stat().st_size / 2**20
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    targets: dict[str, Any] = {}
    if "memory-small" in runs and "stream-large" in runs:
        growth = runs["stream-large"]["peak_rss_mb"] - runs["memory-small"]["peak_rss_mb"]
        targets = {"stream_large_peak_minus_memory_small_mb": growth, "growth<200MB": growth < 200}
    return {
        **head,
        "generated": {"lines": args.lines, "size_mb": size_mb, "generate_s": generate_s},
        "caches": caches,
        "runs": runs,
        "targets": targets,
    }


def report(res: dict[str, Any]) -> str:
    headers = ["run", "examples", "open s", "data MB", "peak RSS MB", "collate ms", "s/step"]
    rows = [
        [n, r["examples"], r["open_s"], r["data_mb"], r["peak_rss_mb"], r["collate_ms"], r["s_per_step"]]
        for n, r in res["runs"].items()
    ]
    cache_rows = [
        [k, v["first_open_s"], v["second_open_s"], v["first_open_rss_growth_mb"]]
        for k, v in res["caches"].items()
    ]
    cache_table = format_table(
        ["corpus", "build (first open) s", "reopen s", "build RSS growth MB"], cache_rows
    )
    return format_table(headers, rows) + "\n\n" + cache_table + "\n" + json.dumps(res["targets"])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return harness.main(argv, parse_args, run, report, worker)


if __name__ == "__main__":
    main()
