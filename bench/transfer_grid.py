"""The transfer classifier's L2 grid trained side by side against one model at a time, on real embeddings.

SentEval's protocol trains one logistic regression per L2 value (1e-5..1e-2) on each fold; the values share the
data and, seeded alike, the shuffles. ``sentcl.evaluation.senteval_classifier.LogisticRegression`` given the
grid trains them in one set of batched products ("grid"); "alone" trains each value by itself, as before
(the same class, one value at a time). For each task the two run alternately on the same cached embeddings
(``bench.transfer_protocols.CachedEncoder``), the results must be equal, and the classifier's seconds (the
encoder's left out) are recorded.

    OMP_NUM_THREADS=1 python -m bench.transfer_grid --cache /tmp/minilm_avg --tasks CR,TREC,MRPC --rounds 2
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from bench import harness
from bench.common import format_table, median, set_threads, write_json
from bench.transfer_protocols import CachedEncoder
from sentcl.evaluation import senteval_classifier
from sentcl.evaluation.transfer import TRANSFER_TASKS, evaluate_transfer

GridModel = senteval_classifier.LogisticRegression


class OneAtATime:
    """The grid's interface (``fit``/``score`` give one value a model) over one lone model per L2 value."""

    def __init__(
        self, n_features: int, n_classes: int, l2reg: Sequence[float], config: Any, seed: int
    ) -> None:
        self.models = [GridModel(n_features, n_classes, reg, config, seed) for reg in l2reg]

    def fit(self, *args: Any, **kwargs: Any) -> list[float]:
        return [m.fit(*args, **kwargs) for m in self.models]

    def score(self, x: np.ndarray, y: np.ndarray) -> list[float]:
        return [m.score(x, y) for m in self.models]


def _alone(
    n_features: int, n_classes: int, l2reg: Any, config: Any, seed: int = senteval_classifier.SEED
) -> Any:
    if isinstance(l2reg, Sequence):
        return OneAtATime(n_features, n_classes, l2reg, config, seed)
    return GridModel(n_features, n_classes, l2reg, config, seed)


@contextmanager
def way(name: str) -> Iterator[None]:
    """Within the block, the protocol trains its grid ``name``: "grid" (the product) or "alone"."""
    senteval_classifier.LogisticRegression = GridModel if name == "grid" else _alone  # type: ignore[misc]
    try:
        yield
    finally:
        senteval_classifier.LogisticRegression = GridModel  # type: ignore[misc]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="all-MiniLM-L6-v2")
    p.add_argument("--pooler", default="avg")
    p.add_argument("--cache", help="Embedding cache prefix (PREFIX.npy, PREFIX.json); created if missing.")
    p.add_argument("--tasks", default=",".join(TRANSFER_TASKS))
    p.add_argument("--mode", choices=("fast", "test"), default="fast")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--data-dir")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--output", type=Path, default=Path("bench/results/transfer_grid.json"))
    args = p.parse_args(argv)
    set_threads(args.threads)
    encode = CachedEncoder(args.model, args.pooler, args.cache, 128)
    payload: dict[str, Any] = {
        **harness.header("transfer_grid", args, args.threads, argv=argv),
        "results": {},
    }
    rows = []
    for t, task in enumerate(args.tasks.split(",")):
        evaluate_transfer(encode, args.data_dir, tasks=(task,), fast=True)  # embeds (cached) and warms up
        seconds: dict[str, list[float]] = {"grid": [], "alone": []}
        results = {}
        for r in range(args.rounds):
            for name in ("grid", "alone")[(t + r) % 2 :] + ("grid", "alone")[: (t + r) % 2]:
                with way(name):
                    start = time.perf_counter()
                    results[name] = evaluate_transfer(
                        encode, args.data_dir, tasks=(task,), fast=args.mode == "fast"
                    )
                    seconds[name].append(time.perf_counter() - start)
        assert results["grid"] == results["alone"], (task, results)
        grid_s, alone_s = median(seconds["grid"]), median(seconds["alone"])
        payload["results"][task] = {
            "acc": results["grid"][task]["acc"],
            "seconds": seconds,
            "grid_s": grid_s,
            "alone_s": alone_s,
            "speedup": alone_s / grid_s,
            "equal": True,
        }
        rows.append(
            [
                task,
                f"{results['grid'][task]['acc']:.2f}",
                f"{alone_s:.1f}",
                f"{grid_s:.1f}",
                f"{alone_s / grid_s:.2f}x",
            ]
        )
        print(format_table(["task", "acc", "alone s", "grid s", "speed-up"], rows[-1:]), flush=True)
        write_json(args.output, payload)
    total = {k: sum(payload["results"][t][f"{k}_s"] for t in payload["results"]) for k in ("grid", "alone")}
    payload["total"] = {**total, "speedup": total["alone"] / total["grid"]}
    print(format_table(["task", "acc", "alone s", "grid s", "speed-up"], rows))
    write_json(args.output, payload)
    return payload


if __name__ == "__main__":
    main()
