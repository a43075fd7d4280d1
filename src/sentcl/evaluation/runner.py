"""Task names -> evaluators, for the training loop and ``sentcl eval``. Each evaluator returns a dict."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.evaluation.sts import evaluate_sts, evaluate_sts_dev, main_score

EncodeFn = Callable[[list[str]], np.ndarray]

# task name -> (evaluator, one-line help)
TASKS: dict[str, tuple[Callable[[EncodeFn, Path], dict[str, Any]], str]] = {
    "sts": (
        lambda enc, d: evaluate_sts(enc, d),
        "the seven STS tasks (STS12-16 'all', STS-B test, SICK-R test)",
    ),
    "dev": (lambda enc, d: evaluate_sts_dev(enc, d), "STS-B dev and SICK-R trial"),
    "stsb": (lambda enc, d: evaluate_sts(enc, d, tasks=("STSBenchmark",)), "STS-B test only"),
    "stsb_dev": (lambda enc, d: evaluate_sts_dev(enc, d, tasks=("STSBenchmark",)), "STS-B dev only"),
}

# dev task name -> how to read its single number from the evaluator's result
DEV_SCORES: dict[str, Callable[[dict[str, Any]], float]] = {
    "stsb_dev": lambda r: main_score(r, "STSBenchmark"),
    "dev": lambda r: (main_score(r, "STSBenchmark") + main_score(r, "SICKRelatedness")) / 2,
}


def check_tasks(tasks: Sequence[str]) -> None:
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise ValueError(f"unknown evaluation task(s) {', '.join(unknown)}; valid: {', '.join(TASKS)}")


def evaluate(encode: EncodeFn, data_dir: Path, tasks: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Run each named task; returns task name -> its result dict."""
    check_tasks(tasks)
    return {task: TASKS[task][0](encode, data_dir) for task in tasks}


def dev_score(encode: EncodeFn, data_dir: Path, dev_task: str) -> float:
    if dev_task not in DEV_SCORES:
        raise ValueError(f"unknown dev task {dev_task!r}; valid: {', '.join(DEV_SCORES)}")
    return DEV_SCORES[dev_task](TASKS[dev_task][0](encode, data_dir))
