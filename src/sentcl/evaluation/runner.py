"""Task names -> evaluators, for the training loop and ``sentcl eval``. Each evaluator returns a dict."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.evaluation.alignment_uniformity import alignment_uniformity
from sentcl.evaluation.anisotropy import anisotropy
from sentcl.evaluation.sts import evaluate_sts, evaluate_sts_dev, format_sts_table, main_score
from sentcl.evaluation.transfer import evaluate_transfer, format_transfer_table

EncodeFn = Callable[[list[str]], np.ndarray]
Evaluator = Callable[[EncodeFn, Path], dict[str, Any]]

# task name -> (evaluator, one-line help)
TASKS: dict[str, tuple[Evaluator, str]] = {
    "sts": (
        lambda enc, d: evaluate_sts(enc, d),
        "the seven STS tasks (STS12-16 'all', STS-B test, SICK-R test)",
    ),
    "dev": (lambda enc, d: evaluate_sts_dev(enc, d), "STS-B dev and SICK-R trial"),
    "stsb": (lambda enc, d: evaluate_sts(enc, d, tasks=("STSBenchmark",)), "STS-B test only"),
    "stsb_dev": (lambda enc, d: evaluate_sts_dev(enc, d, tasks=("STSBenchmark",)), "STS-B dev only"),
    "transfer": (lambda enc, d: evaluate_transfer(enc, d), "the seven SentEval transfer tasks (10-fold CV)"),
    "transfer_fast": (
        lambda enc, d: evaluate_transfer(enc, d, fast=True),
        "transfer tasks, 5 folds, smaller C grid",
    ),
    "align_uniform": (
        lambda enc, d: alignment_uniformity(enc, d, split="test"),
        "alignment/uniformity on STS-B test",
    ),
    "anisotropy": (
        lambda enc, d: anisotropy(enc, d, split="test"),
        "spectrum, random-pair cosine, cosine by gold",
    ),
}
# composite names -> the tasks they run
GROUPS: dict[str, tuple[str, ...]] = {"full": ("sts", "transfer"), "full_fast": ("sts", "transfer_fast")}

# dev task name -> how to read its single number from the evaluator's result
DEV_SCORES: dict[str, Callable[[dict[str, Any]], float]] = {
    "stsb_dev": lambda r: main_score(r, "STSBenchmark"),
    "dev": lambda r: (main_score(r, "STSBenchmark") + main_score(r, "SICKRelatedness")) / 2,
}


def task_names() -> list[str]:
    return [*TASKS, *GROUPS]


def expand(tasks: Sequence[str]) -> list[str]:
    """Composite names replaced by their members, order kept, no repeats; unknown names are an error."""
    unknown = [t for t in tasks if t not in TASKS and t not in GROUPS]
    if unknown:
        raise ValueError(f"unknown evaluation task(s) {', '.join(unknown)}; valid: {', '.join(task_names())}")
    return list(dict.fromkeys(m for t in tasks for m in GROUPS.get(t, (t,))))


def check_tasks(tasks: Sequence[str]) -> None:
    expand(tasks)


def evaluate(encode: EncodeFn, data_dir: Path, tasks: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Run each named task; returns task name -> its result dict."""
    return {task: TASKS[task][0](encode, data_dir) for task in expand(tasks)}


def dev_score(encode: EncodeFn, data_dir: Path, dev_task: str) -> float:
    if dev_task not in DEV_SCORES:
        raise ValueError(f"unknown dev task {dev_task!r}; valid: {', '.join(DEV_SCORES)}")
    return DEV_SCORES[dev_task](TASKS[dev_task][0](encode, data_dir))


def format_results(results_by_model: dict[str, dict[str, dict[str, Any]]]) -> str:
    """Tables for every task of ``{model name: {task: result}}``: STS and transfer as tables, others as JSON."""
    tasks = list(dict.fromkeys(t for results in results_by_model.values() for t in results))
    parts = []
    for task in tasks:
        column = {name: results[task] for name, results in results_by_model.items() if task in results}
        if task in ("sts", "dev", "stsb", "stsb_dev"):
            parts.append(f"## {task}\n{format_sts_table(column)}")
        elif task.startswith("transfer"):
            parts.append(f"## {task}\n{format_transfer_table(column)}")
        else:
            brief = {
                n: {k: v for k, v in r.items() if not isinstance(v, list | dict)} for n, r in column.items()
            }
            parts.append(f"## {task}\n{json.dumps(brief, indent=2)}")
    return "\n\n".join(parts)
