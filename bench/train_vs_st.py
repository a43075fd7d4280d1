"""Training speed: sentcl vs sentence-transformers on unsupervised SimCSE, alternating in one run.

Both start from the same model, see the same batches in the same order (seeded permutation of the corpus),
batch 64, max length 32, the same thread count; each side keeps its own dropout RNG stream. Rounds
alternate the modes (rotating who goes first) so that load from other processes hits every side alike;
the figures are medians over steps. Peak resident memory comes from a fresh process per mode.

    python -m bench.train_vs_st --rounds 5 --steps 4          # from the repository root
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import torch

from bench import harness
from bench.common import (
    count_flops,
    format_table,
    machine_info,
    matmul_peak,
    max_rss_mb,
    median,
    own_rng,
    profile_ops,
    rss_mb,
    set_threads,
    worker_env,
)
from bench.sides import MODES, build_side, mode_spec
from sentcl.evaluation.runner import dev_score
from sentcl.files.paths import resolve_data_dir

DEFAULT_MODES = ["sentcl", "sentcl-b2", "sentcl-fused", "st", "sentcl-bf16"]
BF16_USABLE = 0.5  # bf16 modes run only where bf16 matmul reaches this share of the fp32 peak


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = harness.parser(__doc__, "train_vs_st")
    parser.add_argument(
        "--modes", default=",".join(DEFAULT_MODES), help=f"comma list of {', '.join(MODES)}, sentcl-bN"
    )
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=1, help="steps per mode per round")
    parser.add_argument("--learning-rate", type=float, default=3e-5)
    parser.add_argument("--no-eval", action="store_true", help="skip STS-B dev after training")
    parser.add_argument("--profile", action="store_true", help="torch.profiler over one more step per mode")
    parser.add_argument(
        "--memory-steps", type=int, default=3, help="steps of each fresh memory process (0: skip)"
    )
    parser.add_argument(
        "--memory-allocator", default="mmap128k", help="malloc of the memory processes: glibc or mmap128k"
    )
    parser.add_argument("--memory-modes", default=None, help="modes whose memory is measured (default: all)")
    parser.add_argument("--peak-sizes", default="1024,2048", help="matrix sizes of the matmul peak")
    parser.add_argument("--force-bf16", action="store_true", help="run bf16 even without fast bf16 matmul")
    return parser.parse_args(argv)


def _batches(args: argparse.Namespace, total: int) -> tuple[list[list[str]], Path]:
    return harness.corpus_batches(args.corpus, args.data_dir, args.seed, args.batch_size, total)


def worker(args: argparse.Namespace) -> dict[str, Any]:
    """A fresh process: load one mode, run a few steps, report its peak resident memory."""
    set_threads(args.threads)
    torch.manual_seed(args.seed)
    data, _ = _batches(args, args.memory_steps)
    before = rss_mb()
    side = build_side(args.worker, args.model, args.max_length, args.learning_rate, args.memory_steps)
    loaded = rss_mb()
    for sentences in data:
        side.step(sentences)
    return {
        "mode": args.worker,
        "rss_before_load_mb": before,
        "rss_after_load_mb": loaded,
        "rss_after_steps_mb": rss_mb(),
        "peak_rss_mb": max_rss_mb(),
    }


def measure_memory(args: argparse.Namespace, mode: str) -> dict[str, Any]:
    names = ("model", "corpus", "data_dir", "threads", "batch_size", "max_length", "memory_steps", "seed")
    env = worker_env(harness.ROOT, args.memory_allocator)
    return harness.spawn_worker("bench.train_vs_st", mode, harness.options_of(args, *names), env)


def run(args: argparse.Namespace) -> dict[str, Any]:
    set_threads(args.threads)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    specs = {m: mode_spec(m) for m in modes}  # raises on an unknown mode
    info = machine_info(args.threads)
    sizes = [int(x) for x in args.peak_sizes.split(",")]
    peaks = {
        "fp32": [matmul_peak(torch.float32, sizes)],
        "bf16": matmul_peak(torch.bfloat16, sizes=(min([*sizes, 512]),), repeat=1),
    }
    skipped: dict[str, str] = {}
    if peaks["bf16"] < BF16_USABLE * peaks["fp32"][0] and not args.force_bf16:
        for mode in [m for m in modes if specs[m]["precision"] == "bf16"]:
            skipped[mode] = (
                f"bf16 matmul runs at {peaks['bf16'] / 1e9:.1f} GFLOP/s against {peaks['fp32'][0] / 1e9:.1f} "
                f"in fp32 on this CPU (flags: {' '.join(info['cpu_flags'])}): no native bf16, a step would "
                "take minutes (--force-bf16 runs it anyway)"
            )
    modes = [m for m in modes if m not in skipped]
    total = args.rounds * args.steps
    data, corpus = _batches(args, total)
    sides = {m: build_side(m, args.model, args.max_length, args.learning_rate, total) for m in modes}
    rng: dict[str, torch.Tensor] = {}
    result: dict[str, Any] = {m: {"step_s": [], "round_median_s": [], "loss": []} for m in modes}
    data_dir = resolve_data_dir(args.data_dir)
    start_score = None
    if not args.no_eval:
        start_score = dev_score(sides[modes[0]].encode, data_dir, "stsb_dev")

    # ---- alternating timed rounds
    for r in range(args.rounds):
        peaks["fp32"].append(matmul_peak(torch.float32, sizes[:1], repeat=1))
        for mode in modes[r % len(modes) :] + modes[: r % len(modes)]:
            times = []
            with own_rng(rng, mode, args.seed):
                for k in range(r * args.steps, (r + 1) * args.steps):
                    start = time.perf_counter()
                    result[mode]["loss"].append(sides[mode].step(data[k]))
                    times.append(time.perf_counter() - start)
            result[mode]["step_s"] += times
            result[mode]["round_median_s"].append(median(times))
        print(
            f"round {r + 1}/{args.rounds}: "
            + ", ".join(f"{m} {result[m]['round_median_s'][-1]:.2f}s" for m in modes)
        )

    # ---- quality after the same steps, FLOPs of one step, memory of a fresh process
    peak = max(peaks["fp32"])
    for mode in modes:
        row = result[mode]
        row["s_per_step"] = median(row["step_s"])
        row["sentences_per_s"] = args.batch_size / row["s_per_step"]
        if not args.no_eval:
            row["stsb_dev"] = dev_score(sides[mode].encode, data_dir, "stsb_dev")
        with own_rng(rng, mode, args.seed):
            row["flops_per_step"] = count_flops(lambda m=mode: sides[m].loss_and_backward(data[0]))
        sides[mode].optimizer.zero_grad(set_to_none=True)
        if args.profile:
            with own_rng(rng, mode, args.seed):
                row["profile"] = profile_ops(lambda m=mode: sides[m].step(data[0]))
        row["achieved_flop_s"] = row["flops_per_step"] / row["s_per_step"]
        row["utilisation"] = row["achieved_flop_s"] / peak
        if args.memory_steps and (args.memory_modes is None or mode in args.memory_modes.split(",")):
            row["memory"] = measure_memory(args, mode)
            row["peak_rss_mb"] = row["memory"]["peak_rss_mb"]
    ratios = {m: result["st"]["s_per_step"] / result[m]["s_per_step"] for m in modes if "st" in result}
    # the same ratio per round (the modes ran back to back), then the median: robust to load that drifts
    paired = {
        m: median(
            [s / t for s, t in zip(result["st"]["round_median_s"], result[m]["round_median_s"], strict=True)]
        )
        for m in modes
        if "st" in result
    }
    return {
        "benchmark": "train_vs_st",
        "command": "python -m bench.train_vs_st " + " ".join(sys.argv[1:]),
        "machine": info,
        "config": {
            "model": args.model,
            "corpus": str(corpus),
            "batch_size": args.batch_size,
            "max_length": args.max_length,
            "rounds": args.rounds,
            "steps_per_round": args.steps,
            "steps_per_mode": total,
            "learning_rate": args.learning_rate,
            "seed": args.seed,
            "memory_allocator": args.memory_allocator,
            "length_buckets": {m: getattr(sides[m], "length_buckets", None) for m in modes},
            "packed_tokens": {m: getattr(sides[m], "packed_tokens", None) for m in modes},
        },
        "matmul_peak_flop_s": {"fp32": peak, "fp32_per_round": peaks["fp32"], "bf16": peaks["bf16"]},
        "stsb_dev_start": start_score,
        "modes": result,
        "skipped": skipped,
        "speed_vs_st": ratios,
        "paired_speed_vs_st": paired,
        "targets": _targets(result, ratios),
    }


def _targets(result: dict[str, Any], ratios: dict[str, float]) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def dev(mode: str) -> float | None:
        return result.get(mode, {}).get("stsb_dev")

    # the training-speed target: sentcl (padded or length-bucketed) >= 1.15x the peer at fp32, STS-B dev within 0.3
    for mode in [m for m in result if m.startswith("sentcl") and "bf16" not in m]:
        if mode in ratios:
            gap = None if dev(mode) is None or dev("st") is None else dev(mode) - dev("st")
            out[f"{mode}_fp32_speed>=1.15x_st"] = ratios[mode] >= 1.15
            out[f"{mode}_stsb_dev_gap_to_st"] = gap
            out[f"{mode}_stsb_dev_within_0.3_of_st"] = None if gap is None else abs(gap) <= 0.3
    if "sentcl-bf16" in ratios:
        out["sentcl-bf16_speed>=1.4x_st_fp32"] = ratios["sentcl-bf16"] >= 1.4
    if "sentcl" in result:
        out["sentcl_utilisation>=45%"] = result["sentcl"]["utilisation"] >= 0.45
    return out


def report(res: dict[str, Any]) -> str:
    rows = []
    for mode, row in res["modes"].items():
        rows.append(
            [
                mode,
                row["sentences_per_s"],
                row["s_per_step"],
                res["speed_vs_st"].get(mode, float("nan")),
                res["paired_speed_vs_st"].get(mode, float("nan")),
                row.get("peak_rss_mb", float("nan")),
                f"{100 * row['utilisation']:.0f}%",
                row.get("stsb_dev", float("nan")),
            ]
        )
    headers = [
        "mode",
        "train sent/s",
        "s/step",
        "speed vs st",
        "paired",
        "peak RSS MB",
        "FLOP/s of peak",
        "STS-B dev",
    ]
    lines = [format_table(headers, rows)]
    lines.append(
        f"matmul peak fp32 {res['matmul_peak_flop_s']['fp32'] / 1e9:.0f} GFLOP/s; start STS-B dev {res['stsb_dev_start']}"
    )
    lines += [f"skipped {m}: {why}" for m, why in res["skipped"].items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return harness.main(argv, parse_args, run, report, worker)


if __name__ == "__main__":
    main()
