"""Task names -> evaluators, for the training loop and ``sentcl eval``. Each evaluator returns a dict."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.evaluation.alignment_uniformity import alignment_uniformity
from sentcl.evaluation.anisotropy import anisotropy
from sentcl.evaluation.pairs import evaluate_pairs, read_pairs
from sentcl.evaluation.retrieval_eval import dev_split, evaluate_retrieval, read_beir
from sentcl.evaluation.sts import evaluate_sts, evaluate_sts_dev, format_sts_table, main_score
from sentcl.evaluation.transfer import PROTOCOLS, evaluate_transfer, format_transfer_table

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
    "transfer": (
        lambda enc, d, protocol="senteval": evaluate_transfer(enc, d, protocol=protocol),
        "the seven SentEval transfer tasks (SentEval's protocol, SimCSE's test mode: 10 folds)",
    ),
    "transfer_fast": (
        lambda enc, d, protocol="senteval": evaluate_transfer(enc, d, fast=True, protocol=protocol),
        "transfer tasks, SentEval's prototyping settings (SimCSE's fasttest: 5 folds, RMSprop)",
    ),
    "align_uniform": (
        lambda enc, d: alignment_uniformity(enc, d, split="test"),
        "alignment/uniformity on STS-B test",
    ),
    "anisotropy": (
        lambda enc, d: anisotropy(enc, d, split="test"),
        "spectrum, random-pair cosine, cosine by gold",
    ),
    "mteb": (
        lambda enc, d: _mteb_local(enc, d),
        "the seven STS tasks scored by mteb's own code, data from the local SentEval folder (offline)",
    ),
}


def _mteb_local(encode: EncodeFn, data_dir: Path) -> dict[str, Any]:
    from sentcl.interop.mteb_adapter import evaluate_mteb_local  # mteb is an optional extra

    return evaluate_mteb_local(encode, data_dir)


# composite names -> the tasks they run
GROUPS: dict[str, tuple[str, ...]] = {"full": ("sts", "transfer"), "full_fast": ("sts", "transfer_fast")}

# dev task name -> how to read its single number from the evaluator's result
DEV_SCORES: dict[str, Callable[[dict[str, Any]], float]] = {
    "stsb_dev": lambda r: main_score(r, "STSBenchmark"),
    "dev": lambda r: (main_score(r, "STSBenchmark") + main_score(r, "SICKRelatedness")) / 2,
}


# dev tasks on the user's own data, written PREFIX:PATH (path absolute, else relative to the working folder, else
# to the data folder): pairs:FILE scores Spearman x100 (evaluation.pairs), retrieval:DIR nDCG@10 x100
# (evaluation.retrieval_eval, qrels/dev.tsv when present)
DEV_PREFIXES: dict[str, Callable[[EncodeFn, Path], float]] = {
    "pairs": lambda enc, path: evaluate_pairs(enc, path)["spearman"],
    "retrieval": lambda enc, path: evaluate_retrieval(enc, path, dev_split(path))["ndcg@10"],
}


def user_data_path(text: str, data_dir: Path | None) -> Path:
    """A user's file or folder: absolute, else relative to the working folder, else to the data folder."""
    path = Path(text).expanduser()
    candidates = [path] if path.is_absolute() else [path, *([data_dir / path] if data_dir else [])]
    for candidate in candidates:
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"{text} not found (looked in: {', '.join(map(str, candidates))})")


def check_dev_task(dev_task: str, data_dir: Path | None) -> None:
    """Fail before training when a PREFIX:PATH dev task names a missing or malformed file (reads it once)."""
    prefix, _, arg = dev_task.partition(":")
    if prefix not in DEV_PREFIXES or not arg:
        return
    path = user_data_path(arg, data_dir)
    if prefix == "pairs":
        read_pairs(path)
    else:
        read_beir(path, dev_split(path))


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


# tasks whose evaluator takes ``protocol`` (transfer_protocol of evaluate: "senteval" or "sklearn")
TRANSFER_PROTOCOL_TASKS = ("transfer", "transfer_fast")


def evaluate(
    encode: EncodeFn, data_dir: Path, tasks: Sequence[str], transfer_protocol: str = "senteval"
) -> dict[str, dict[str, Any]]:
    """Run each named task; returns task name -> its result dict. ``transfer_protocol``: see evaluation.transfer."""
    if transfer_protocol not in PROTOCOLS:
        raise ValueError(f"unknown transfer protocol {transfer_protocol!r}; valid: {', '.join(PROTOCOLS)}")
    return {
        task: TASKS[task][0](encode, data_dir, protocol=transfer_protocol)  # type: ignore[call-arg]
        if task in TRANSFER_PROTOCOL_TASKS
        else TASKS[task][0](encode, data_dir)
        for task in expand(tasks)
    }


def dev_score(encode: EncodeFn, data_dir: Path, dev_task: str) -> float:
    prefix, _, arg = dev_task.partition(":")
    if prefix in DEV_PREFIXES and arg:
        return DEV_PREFIXES[prefix](encode, user_data_path(arg, data_dir))
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
