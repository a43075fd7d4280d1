"""Thread settings: sentcl training steps with 1 or 2 torch threads and OpenMP's active or passive waiting.

Each setting runs in its own process (OMP_WAIT_POLICY is read when the OpenMP runtime starts); the
settings alternate over rounds and the figure is the median step time.

    python -m bench.threads --rounds 3 --steps 3               # from the repository root
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from bench import harness
from bench.common import format_table, median, set_threads, worker_env
from bench.sides import SentclSide

DEFAULT_SETTINGS = "1:default,2:default,2:passive"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = harness.parser(__doc__, "threads", threads=None, worker=int)
    parser.add_argument("--settings", default=DEFAULT_SETTINGS, help="threads:default|passive,...")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per setting per round")
    return parser.parse_args(argv)


def worker(args: argparse.Namespace) -> dict[str, Any]:
    """One warm-up step, then ``steps`` timed ones."""
    set_threads(args.worker)
    data, _ = harness.corpus_batches(args.corpus, args.data_dir, args.seed, args.batch_size, args.steps + 1)
    side = SentclSide(args.model, args.max_length, 3e-5, args.steps + 1)
    side.step(data[0])
    times = []
    for sentences in data[1:]:
        start = time.perf_counter()
        side.step(sentences)
        times.append(time.perf_counter() - start)
    return {"step_s": times, "loadavg": os.getloadavg()[0]}


def run(args: argparse.Namespace) -> dict[str, Any]:
    head = harness.header("threads", args, 0)  # the machine and its load at the start
    settings = [(int(t), policy) for t, policy in (s.split(":") for s in args.settings.split(","))]
    result: dict[str, dict[str, Any]] = {f"{t}:{p}": {"step_s": [], "loadavg": []} for t, p in settings}
    names = ("model", "corpus", "data_dir", "steps", "seed", "batch_size", "max_length")
    for r in range(args.rounds):
        for threads, policy in settings[r % len(settings) :] + settings[: r % len(settings)]:
            env = worker_env(harness.ROOT)
            env.pop("OMP_WAIT_POLICY", None)
            if policy == "passive":
                env["OMP_WAIT_POLICY"] = "PASSIVE"
            out = harness.spawn_worker("bench.threads", str(threads), harness.options_of(args, *names), env)
            row = result[f"{threads}:{policy}"]
            row["step_s"] += out["step_s"]
            row["loadavg"].append(out["loadavg"])
        print(f"round {r + 1}/{args.rounds} done")
    for row in result.values():
        row["s_per_step"] = median(row["step_s"])
        row["sentences_per_s"] = args.batch_size / row["s_per_step"]
    return {**head, "settings": result}


def report(res: dict[str, Any]) -> str:
    rows = [
        [k, r["s_per_step"], r["sentences_per_s"], median(r["loadavg"])] for k, r in res["settings"].items()
    ]
    return format_table(["threads:OMP wait", "s/step", "train sent/s", "load avg"], rows)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return harness.main(argv, parse_args, run, report, worker)


if __name__ == "__main__":
    main()
