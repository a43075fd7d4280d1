"""Seconds per training step of the adaptation benchmark's methods, measured by sentcl's own training loop: each
method trains ``--measure`` + 1 steps on a domain's text with a metrics line every step, and a step's time is
the batch over that line's sentences/s; the first step (warm-up) is left out and the median is kept. The CPU
seconds of each whole measuring run (model load, the steps, the final save) are kept beside them: on a shared
machine the wall time per step depends on the load, the CPU time much less."""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

#: the domains timed: the longest sentences (CR) and the shortest (STS-B captions)
TIMED_DOMAINS = ("cr", "stsb-captions")


def step_seconds(metrics: Path, batch_size: int) -> list[float]:
    """Per-step seconds of a run's metrics lines (``log_steps=1``), the first step left out."""
    lines = [json.loads(line) for line in metrics.read_text(encoding="utf-8").splitlines() if line.strip()]
    rates = [row["sentences_per_s"] for row in lines if row.get("event") == "train"]
    return [batch_size / r for r in rates[1:]]


def time_steps(args: argparse.Namespace, methods: list[str], start: str, work: Path) -> dict[str, Any]:
    import sentcl
    from bench.adaptation import train_overrides
    from bench.adaptation_domains import DOMAINS
    from sentcl.config import TrainConfig, load_config
    from sentcl.files.paths import resolve_data_dir

    data_dir = resolve_data_dir(None)
    raw: dict[str, dict[str, list[float]]] = {}
    cpu: dict[str, dict[str, float]] = {}  # CPU seconds of each whole measuring run (load, steps, save)
    for domain in TIMED_DOMAINS:
        corpus = work / f"{domain}.txt"
        corpus.parent.mkdir(parents=True, exist_ok=True)
        corpus.write_text("\n".join(DOMAINS[domain].sentences(data_dir)) + "\n", encoding="utf-8")
        for method in methods:
            out_dir = work / f"measure-{domain}-{method}"
            shutil.rmtree(out_dir, ignore_errors=True)
            overrides = train_overrides(method, start, corpus, out_dir, args.measure + 1, args, 0)
            cfg = load_config(TrainConfig, None, [*overrides, "training.log_steps=1"])
            cpu0 = time.process_time()
            sentcl.train(cfg)
            cpu.setdefault(method, {})[domain] = time.process_time() - cpu0
            raw.setdefault(method, {})[domain] = step_seconds(out_dir / "metrics.jsonl", args.batch_size)
            shutil.rmtree(out_dir, ignore_errors=True)
    per_step = {m: statistics.median([s for d in raw[m].values() for s in d]) for m in methods}
    return {
        "what": "seconds per training step (median over the timed steps of both domains), one thread",
        "batch_size": args.batch_size,
        "max_length": args.max_length,
        "steps_timed": args.measure,
        "domains": list(TIMED_DOMAINS),
        "seconds_per_step": per_step,
        "raw": raw,
        "cpu_seconds_per_run": cpu,
        "command": f"python -m bench.adaptation --measure {args.measure} --batch-size {args.batch_size}",
    }
