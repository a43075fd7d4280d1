"""Thread settings: sentcl training steps with 1 or 2 torch threads and OpenMP's active or passive waiting.

Each setting runs in its own process (OMP_WAIT_POLICY is read when the OpenMP runtime starts); the
settings alternate over rounds and the figure is the median step time.

    python -m bench.threads --rounds 3 --steps 3               # from the repository root
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import format_table, machine_info, median, set_threads, write_json
from bench.sides import SentclSide
from bench.train_vs_st import _batches

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SETTINGS = "1:default,2:default,2:passive"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--corpus", default="corpora/wiki1m_prefix.txt")
    parser.add_argument("--settings", default=DEFAULT_SETTINGS, help="threads:default|passive,...")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per setting per round")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=32)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--output", default="bench/results/threads.json")
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def worker(args: argparse.Namespace) -> dict[str, Any]:
    """One warm-up step, then ``steps`` timed ones."""
    set_threads(args.worker)
    data, _ = _batches(args, args.steps + 1)
    side = SentclSide(args.model, args.max_length, 3e-5, args.steps + 1)
    side.step(data[0])
    times = []
    for sentences in data[1:]:
        start = time.perf_counter()
        side.step(sentences)
        times.append(time.perf_counter() - start)
    return {"step_s": times, "loadavg": os.getloadavg()[0]}


def run(args: argparse.Namespace) -> dict[str, Any]:
    info = machine_info(0)
    settings = [(int(t), policy) for t, policy in (s.split(":") for s in args.settings.split(","))]
    result: dict[str, dict[str, Any]] = {f"{t}:{p}": {"step_s": [], "loadavg": []} for t, p in settings}
    for r in range(args.rounds):
        for threads, policy in settings[r % len(settings) :] + settings[: r % len(settings)]:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
            env.pop("OMP_WAIT_POLICY", None)
            if policy == "passive":
                env["OMP_WAIT_POLICY"] = "PASSIVE"
            command = [sys.executable, "-m", "bench.threads", "--worker", str(threads), "--model", args.model]
            command += ["--corpus", args.corpus, "--steps", str(args.steps), "--seed", str(args.seed)]
            command += ["--batch-size", str(args.batch_size), "--max-length", str(args.max_length)]
            if args.data_dir:
                command += ["--data-dir", args.data_dir]
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"threads worker failed:\n{done.stderr[-3000:]}")
            out = json.loads(done.stdout.strip().splitlines()[-1])
            row = result[f"{threads}:{policy}"]
            row["step_s"] += out["step_s"]
            row["loadavg"].append(out["loadavg"])
        print(f"round {r + 1}/{args.rounds} done")
    for row in result.values():
        row["s_per_step"] = median(row["step_s"])
        row["sentences_per_s"] = args.batch_size / row["s_per_step"]
    return {
        "benchmark": "threads",
        "command": "python -m bench.threads " + " ".join(sys.argv[1:]),
        "machine": info,
        "config": {k: v for k, v in vars(args).items() if k not in ("output", "worker")},
        "settings": result,
    }


def report(res: dict[str, Any]) -> str:
    rows = [
        [k, r["s_per_step"], r["sentences_per_s"], median(r["loadavg"])] for k, r in res["settings"].items()
    ]
    return format_table(["threads:OMP wait", "s/step", "train sent/s", "load avg"], rows)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if args.worker is not None:
        out = worker(args)
        print(json.dumps(out))
        return out
    res = run(args)
    print(report(res))
    print("wrote", write_json(args.output, res))
    return res


if __name__ == "__main__":
    main()
