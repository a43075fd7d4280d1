"""What the gather of in-batch negatives costs a training step: ``sentcl.distributed.gather_views`` (every
process's (b, V, D) embeddings to every process, with gradients) and its backward, over gloo on this machine's
loopback (``world`` processes, a stand-in for machines: what crosses the wire is the same bytes), against the
same step's objective alone (world 1). Median seconds over ``--steps`` steps after a warm-up, and the bytes each
process receives per step: the forward gather, (world-1)·b·V·D floats, and the backward's all-reduce of the
whole gathered gradient, twice that in a ring.

    python -m bench.gather_cost --worlds 2 4 --batch 64 --dims 384 768
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from bench import harness
from bench.common import format_table, write_json
from sentcl import distributed
from sentcl.objectives import InfoNCE

VIEWS = 2


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--worlds", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--batch", type=int, default=64, help="Examples per process.")
    parser.add_argument("--dims", type=int, nargs="+", default=[384, 768])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--output", default="bench/results/gather_cost.json")
    return parser.parse_args(argv)


def _steps(batch: int, dim: int, steps: int) -> list[float]:
    """Seconds of gather + InfoNCE + backward per step, in this process (after 3 warm-up steps)."""
    objective = InfoNCE(0.05)
    times = []
    for i in range(steps + 3):
        z = torch.randn(batch, VIEWS, dim, requires_grad=True)  # (b, V, D)
        start = time.perf_counter()
        objective(distributed.gather_views(z))["loss"].backward()  # (world·b, V, D) gathered
        if i >= 3:
            times.append(time.perf_counter() - start)
    return times


def _worker(rank: int, world: int, store: str, args: argparse.Namespace, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"file://{store}", rank=rank, world_size=world, timeout=timedelta(seconds=120)
    )
    try:
        result = {dim: statistics.median(_steps(args.batch, dim, args.steps)) for dim in args.dims}
        torch.save(result, Path(out, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def measure(world: int, args: argparse.Namespace) -> dict[int, float]:
    """dim -> the slowest process's median step seconds."""
    if world == 1:
        torch.set_num_threads(1)
        return {dim: statistics.median(_steps(args.batch, dim, args.steps)) for dim in args.dims}
    with tempfile.TemporaryDirectory() as tmp:
        mp.start_processes(
            _worker,
            args=(world, str(Path(tmp) / "store"), args, tmp),
            nprocs=world,
            join=True,
            start_method="fork",
        )
        ranks = [torch.load(Path(tmp) / f"rank{r}.pt") for r in range(world)]
    return {dim: max(r[dim] for r in ranks) for dim in args.dims}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    res: dict[str, Any] = {**harness.header("gather_cost", args, 1, argv=argv), "rows": []}
    alone = measure(1, args)
    for world in args.worlds:
        timed = measure(world, args)
        for dim in args.dims:
            received = (world - 1) * args.batch * VIEWS * dim * 4  # float32 rows of the other processes
            res["rows"].append({
                "world": world,
                "dim": dim,
                "batch_per_process": args.batch,
                "step_s": timed[dim],
                "alone_s": alone[dim],
                "gather_s": timed[dim] - alone[dim],
                # the forward gather, and the backward's ring all-reduce of the (world·b, V, D) gradient: 2x
                "bytes_in_per_step": 3 * received,
            })  # fmt: skip
    res["note"] = (
        "gloo over loopback on one 2-core machine shared with other jobs (loadavg recorded): processes beyond "
        "2 share cores, so the time is an upper bound of the exchange itself; across machines add the "
        "network time of bytes_in_per_step."
    )
    print(format_table(["world", "dim", "step s", "alone s", "gather s", "MB in/step"],
                       [[r["world"], r["dim"], r["step_s"], r["alone_s"], r["gather_s"],
                         r["bytes_in_per_step"] / 1e6] for r in res["rows"]]))  # fmt: skip
    print("wrote", write_json(args.output, res))
    return res


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
