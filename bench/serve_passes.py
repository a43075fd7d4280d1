"""The CPU a served sentence costs in its forward pass, replayed in process: the passes the service's batcher
cuts (``serve.batching.next_pass`` over the sentences of ``--clients`` requests in flight, a request replaced
by the next once all its sentences are taken), run by the packed forward on token ids (``serve.passes``),
against the in-process ``encode(batch_size=--batch-size)`` of the same sentences. One thread, each arm in a
fresh process (glibc's malloc settings hold for a process's life), arms rotated per round:

- ``encode``: the in-process encode, glibc's default allocator;
- ``passes_fixed``: the service's passes with glibc's mmap threshold fixed at 128 KiB (``serve`` before);
- ``passes_release``: the passes on glibc's heap, free pages returned at most once a second
  (``training.allocator.PeriodicRelease``, ``serve``'s default);
- ``passes_heap``: the passes on glibc's heap, nothing returned (``serve --keep-malloc-threshold``).

User and system CPU seconds of the arm's run (after a warm-up pass) and sentences per CPU-second; the
requests are ``bench.serve_load``'s (same seed and sizes).

    python -m bench.serve_passes --rounds 3
"""

from __future__ import annotations

import argparse
import itertools
import resource
import time
from typing import Any

from bench import harness
from bench.common import format_table, median, set_threads
from bench.serve_load import add_load_options, load_requests

ARMS = ("encode", "passes_fixed", "passes_release", "passes_heap")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = harness.parser(__doc__, "serve_passes", corpus=False, max_length=128, threads=1, seed=0)
    add_load_options(p)
    p.add_argument("--max-batch-tokens", type=int, default=4096)
    return p.parse_args(argv)


def service_passes(lengths: list[list[int]], args: argparse.Namespace) -> list[list[tuple[int, int]]]:
    """The passes, as (request, row) pairs, that the batcher cuts with ``--clients`` requests in flight."""
    from sentcl.serve.batching import _Item, next_pass
    from sentcl.serve.passes import pass_padding

    pool: list[_Item] = []  # an item's job is its request's number here
    left: dict[int, int] = {}  # request -> its sentences not yet taken
    passes: list[list[tuple[int, int]]] = []
    upcoming, arrival = iter(range(len(lengths))), itertools.count()
    while True:
        while len(left) < args.clients and (r := next(upcoming, None)) is not None:
            left[r] = len(lengths[r])
            pool += [_Item(r, row, n, next(arrival)) for row, n in enumerate(lengths[r])]  # type: ignore[arg-type]
        if not pool:
            return passes
        chosen = next_pass(pool, args.serve_batch_size, args.max_batch_tokens, pass_padding(True))
        taken = set(map(id, chosen))
        pool = [item for item in pool if id(item) not in taken]
        passes.append([(int(item.job), item.row) for item in chosen])  # type: ignore[call-overload]
        for request, _ in passes[-1]:
            left[request] -= 1
            if not left[request]:
                del left[request]


def worker(args: argparse.Namespace) -> dict[str, Any]:
    """One arm (``--worker ARM``) in this fresh process: its user and system CPU seconds."""
    set_threads(args.threads)
    from sentcl.modeling.open import open_model
    from sentcl.serve.passes import encode_ids
    from sentcl.training.allocator import PeriodicRelease, fix_mmap_threshold

    if args.worker == "passes_fixed":
        assert fix_mmap_threshold()
    requests = load_requests(args)
    flat = [s for r in requests for s in r]
    encoder = open_model(args.model, pooler=args.pooler)
    encoder.eval()
    tokenizer = encoder.tokenizer
    ids = [tokenizer(r, truncation=True, max_length=args.max_length)["input_ids"] for r in requests]
    passes = service_passes([[len(x) for x in r] for r in ids], args)
    pad = tokenizer.pad_token_id or 0
    after = PeriodicRelease(1.0).maybe if args.worker == "passes_release" else (lambda: None)

    def run() -> None:
        if args.worker == "encode":
            encoder.encode(flat, batch_size=args.batch_size, max_length=args.max_length)
            return
        for one in passes:
            encode_ids(encoder, [ids[r][row] for r, row in one], pad)
            after()

    encoder.encode(flat[: args.batch_size], batch_size=args.batch_size)  # warm-up
    # getrusage and CLOCK_PROCESS_CPUTIME_ID count in microseconds or finer; os.times counts clock ticks
    # (10 ms), which a small arm's run can fall inside, leaving zero CPU seconds to divide by.
    start, start_cpu = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
    run()
    end, cpu = resource.getrusage(resource.RUSAGE_SELF), time.process_time() - start_cpu
    return {
        "sentences": len(flat),
        "passes": len(passes) if args.worker != "encode" else None,
        "user_s": end.ru_utime - start.ru_utime,
        "sys_s": end.ru_stime - start.ru_stime,
        "cpu_s": cpu,
        "sentences_per_cpu_s": len(flat) / cpu,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    res: dict[str, Any] = {**harness.header("serve_passes", args, args.threads), "rounds": []}
    options = harness.options_of(
        args, "model", "pooler", "data_dir", "requests", "min_sentences", "max_sentences", "clients"
    )
    options.update(harness.options_of(args, "serve_batch_size", "max_batch_tokens", "batch_size"))
    options.update(harness.options_of(args, "max_length", "threads", "seed"))
    for r in range(args.rounds):
        shift = r % len(ARMS)
        row = {
            arm: harness.spawn_worker("bench.serve_passes", arm, options)
            for arm in ARMS[shift:] + ARMS[:shift]
        }
        for arm in ARMS[1:]:
            row[arm]["cpu_ratio_to_encode"] = (
                row[arm]["sentences_per_cpu_s"] / row["encode"]["sentences_per_cpu_s"]
            )
        res["rounds"].append(row)
        print(
            f"round {r + 1}/{args.rounds}: "
            + ", ".join(f"{a} {row[a]['sentences_per_cpu_s']:.0f}" for a in ARMS)
        )
    res["summary"] = {
        arm: {
            key: median([row[arm][key] for row in res["rounds"]])
            for key in (
                "user_s",
                "sys_s",
                "sentences_per_cpu_s",
                *(("cpu_ratio_to_encode",) if arm != "encode" else ()),
            )
        }
        for arm in ARMS
    }
    return res


def report(res: dict[str, Any]) -> str:
    rows = [
        [arm, s["user_s"], s["sys_s"], s["sentences_per_cpu_s"], s.get("cpu_ratio_to_encode", 1.0)]
        for arm, s in res["summary"].items()
    ]
    return format_table(
        ["arm", "user CPU-s", "system CPU-s", "sentences / CPU-s", "per CPU-s vs encode"], rows
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return harness.main(argv, parse_args, run, report, worker)


if __name__ == "__main__":
    main()
