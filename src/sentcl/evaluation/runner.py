"""Evaluation tasks by name, for the training loop, ``sentcl eval`` and the report: one ``Task`` record each.

A task's record holds its evaluator, its help line (``sentcl eval --help``), its formatter (the table the
CLI and the report print) and, where it has one, its headline score (the one number a dev task, the grid
and the model card read). Each evaluator returns a dict. A task implemented above this floor (MTEB's, in
``sentcl.interop.mteb_adapter``) adds itself with ``register_task`` when its module is imported.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sentcl.config.names import EVAL_GROUP_MEMBERS, EVAL_TASK_HELP, eval_tasks_help
from sentcl.data.scored_pairs import read_pairs
from sentcl.evaluation.alignment_uniformity import alignment_uniformity
from sentcl.evaluation.anisotropy import anisotropy
from sentcl.evaluation.pairs import evaluate_pairs
from sentcl.evaluation.progress import Progress
from sentcl.evaluation.retrieval_eval import dev_split, evaluate_retrieval, read_beir
from sentcl.evaluation.senteval_readers import STS_TASKS
from sentcl.evaluation.sts import (
    DISPLAY_NAMES,
    STS_YEARS,
    evaluate_sts,
    evaluate_sts_dev,
    format_sts_table,
    main_score,
)
from sentcl.evaluation.transfer import (
    DEFAULT_PROTOCOL,
    PROTOCOLS,
    TRANSFER_TASKS,
    evaluate_transfer,
    format_transfer_table,
)
from sentcl.types import EncodeFn


@dataclass(frozen=True)
class EvalOptions:
    """What an evaluator may read besides the encoder and the data folder: the transfer tasks' protocol and
    subset (see evaluation.transfer), and ``on_done(part)``, called as each part (an STS or transfer task)
    finishes, for progress."""

    transfer_protocol: str = DEFAULT_PROTOCOL
    transfer_tasks: tuple[str, ...] = TRANSFER_TASKS
    on_done: Callable[[str], None] | None = None


# (encode, data folder, options) -> result
Evaluator = Callable[[EncodeFn, Path, EvalOptions], dict[str, Any]]
# {column (model) name: result} -> text (a Markdown table, or JSON)
Formatter = Callable[[Mapping[str, Mapping[str, Any]]], str]


def format_json(column: Mapping[str, Mapping[str, Any]]) -> str:
    """The scalar entries of each result as indented JSON (lists and nested dicts left out); a number that is
    not finite reads "undefined (WHY)", the result's "undefined" reason (a model giving every pair one cosine)."""

    def shown(result: Mapping[str, Any], value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return f"undefined ({result.get('undefined', 'not a number')})"
        return value

    brief = {
        n: {k: shown(r, v) for k, v in r.items() if not isinstance(v, list | dict)} for n, r in column.items()
    }
    return json.dumps(brief, indent=2, ensure_ascii=False)


@dataclass(frozen=True)
class Task:
    """One evaluation task. ``headline``: the result's one number (Spearman x 100 for STS), None where there
    is none; ``dev``: its data is a dev split, so it may pick the best checkpoint during training."""

    name: str
    help: str
    evaluate: Evaluator
    format: Formatter = format_json
    headline: Callable[[Mapping[str, Any]], float] | None = None
    title: str = ""  # the headline's column title (the experiment grid's table)
    dev: bool = False
    # the parts it reports as done (progress); none: the task is one part
    parts: Callable[[EvalOptions], Sequence[str]] | None = None


def format_mteb_table(column: Mapping[str, Mapping[str, Any]]) -> str:
    """mteb's STS main scores as the ``sts`` task's table (mteb names SICK-R as sentcl displays it)."""
    by_display = {shown: name for name, shown in DISPLAY_NAMES.items()}
    as_sts = {}
    for model, result in column.items():
        res: dict[str, Any] = {"avg": result["avg"]} if "avg" in result else {}
        for key, value in result.items():
            name = by_display.get(key, key)
            if name in STS_TASKS:
                res[name] = {"all": value} if name in STS_YEARS else {"spearman": value}
        as_sts[model] = res
    return format_sts_table(as_sts)


def _stsb(result: Mapping[str, Any]) -> float:
    return main_score(result, "STSBenchmark")


def _stsb_task(name: str, split: str, evaluate: Callable[..., dict[str, Any]]) -> Task:
    """STS-B alone on one split ("test" or "dev"; a dev split may pick the best checkpoint)."""
    return Task(
        name,
        EVAL_TASK_HELP[name],
        lambda enc, d, protocol: evaluate(enc, d, tasks=("STSBenchmark",)),
        format_sts_table,
        headline=_stsb,
        title=f"STS-B {split}",
        dev=split == "dev",
    )


TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        Task(
            "sts",
            EVAL_TASK_HELP["sts"],
            lambda enc, d, o: evaluate_sts(enc, d, on_done=o.on_done),
            format_sts_table,
            headline=lambda r: float(r["avg"]),
            title="STS avg. (7 tasks)",
            parts=lambda o: STS_TASKS,
        ),
        Task(
            "dev",
            EVAL_TASK_HELP["dev"],
            lambda enc, d, o: evaluate_sts_dev(enc, d, on_done=o.on_done),
            format_sts_table,
            headline=lambda r: (_stsb(r) + main_score(r, "SICKRelatedness")) / 2,
            title="STS-B dev / SICK-R trial",
            dev=True,
            parts=lambda o: ("STSBenchmark", "SICKRelatedness"),
        ),
        _stsb_task("stsb", "test", evaluate_sts),
        _stsb_task("stsb_dev", "dev", evaluate_sts_dev),
        Task(
            "transfer",
            EVAL_TASK_HELP["transfer"],
            lambda enc, d, o: evaluate_transfer(
                enc, d, tasks=o.transfer_tasks, protocol=o.transfer_protocol, on_done=o.on_done
            ),
            format_transfer_table,
            parts=lambda o: o.transfer_tasks,
        ),
        Task(
            "transfer_fast",
            EVAL_TASK_HELP["transfer_fast"],
            lambda enc, d, o: evaluate_transfer(
                enc, d, tasks=o.transfer_tasks, fast=True, protocol=o.transfer_protocol, on_done=o.on_done
            ),
            format_transfer_table,
            parts=lambda o: o.transfer_tasks,
        ),
        Task(
            "align_uniform",
            EVAL_TASK_HELP["align_uniform"],
            lambda enc, d, o: alignment_uniformity(enc, d, split="test"),
        ),
        Task(
            "anisotropy",
            EVAL_TASK_HELP["anisotropy"],
            lambda enc, d, o: anisotropy(enc, d, split="test"),
        ),
    )
}


def register_task(task: Task) -> None:
    """Add a task that lives above evaluation (``sentcl.interop.mteb_adapter`` registers "mteb" when imported;
    the CLI imports it). A name is registered once."""
    if task.name in TASKS or task.name in GROUPS:
        raise ValueError(f"evaluation task {task.name!r} is already registered")
    TASKS[task.name] = task


# composite names -> the tasks they run
GROUPS: dict[str, tuple[str, ...]] = dict(EVAL_GROUP_MEMBERS)


# dev tasks on the user's own data, written PREFIX:PATH (path absolute, else relative to the working folder, else
# to the data folder): pairs:FILE scores Spearman x100 (evaluation.pairs), retrieval:DIR nDCG@10 x100
# (evaluation.retrieval_eval, qrels/dev.tsv when present)
DEV_PREFIXES: dict[str, Callable[[EncodeFn, Path], float]] = {
    "pairs": lambda enc, path: evaluate_pairs(enc, path)["spearman"],
    "retrieval": lambda enc, path: evaluate_retrieval(enc, path, dev_split(path))["ndcg@10"],
}


def dev_task_names() -> list[str]:
    """The tasks that may pick the best checkpoint (a dev split and a headline score)."""
    return [name for name, task in TASKS.items() if task.dev and task.headline is not None]


def tasks_help() -> str:
    """One line per task and group (``sentcl.config.names.eval_tasks_help``, which the CLI reads)."""
    return eval_tasks_help()


def user_data_path(text: str, data_dir: Path | None) -> Path:
    """A user's file or folder: absolute, else relative to the working folder, else to the data folder
    (``sentcl.files.paths.user_file``); FileNotFoundError naming where it looked when it is in neither."""
    from sentcl.files.paths import user_file

    found = user_file(text, data_dir)
    if found.exists():
        return found
    candidates = dict.fromkeys([Path(text).expanduser(), found])
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


def evaluate(
    encode: EncodeFn,
    data_dir: Path,
    tasks: Sequence[str],
    transfer_protocol: str = DEFAULT_PROTOCOL,
    transfer_tasks: Sequence[str] | None = None,
    progress: bool = True,
) -> dict[str, dict[str, Any]]:
    """Run each named task; returns task name -> its result dict. ``transfer_protocol``, ``transfer_tasks``
    (a subset of the seven, default all): see evaluation.transfer. ``progress``: parts done out of the total
    on stderr (evaluation.progress)."""
    if transfer_protocol not in PROTOCOLS:
        raise ValueError(f"unknown transfer protocol {transfer_protocol!r}; valid: {', '.join(PROTOCOLS)}")
    subset = TRANSFER_TASKS if transfer_tasks is None else tuple(dict.fromkeys(transfer_tasks))
    unknown = [t for t in subset if t not in TRANSFER_TASKS]
    if unknown or not subset:
        raise ValueError(
            f"transfer tasks: {', '.join(unknown) or 'none given'}; choose from {', '.join(TRANSFER_TASKS)}"
        )
    names = expand(tasks)
    options = EvalOptions(transfer_protocol, subset)
    total = sum(len(TASKS[t].parts(options)) if TASKS[t].parts else 1 for t in names)  # type: ignore[misc]
    meter = Progress(total) if progress else None
    results = {}
    try:
        for name in names:

            def part_done(part: str, name: str = name) -> None:
                if meter is not None:
                    meter.done(f"{name} {part}")

            results[name] = TASKS[name].evaluate(encode, data_dir, replace(options, on_done=part_done))
            if meter is not None and TASKS[name].parts is None:
                meter.done(name)
    finally:
        if meter is not None:
            meter.close()
    return results


def headline(task: str, result: Mapping[str, Any]) -> float:
    """The one number of ``task``'s result (e.g. STS-B Spearman x 100); an error for a task that has none."""
    scorer = TASKS[task].headline if task in TASKS else None
    if scorer is None:
        with_one = [name for name, t in TASKS.items() if t.headline is not None]
        raise ValueError(f"task {task!r} has no headline score; tasks with one: {', '.join(with_one)}")
    return scorer(result)


def dev_score(encode: EncodeFn, data_dir: Path, dev_task: str) -> float:
    return dev_evaluation(encode, data_dir, dev_task)[0]


def dev_evaluation(encode: EncodeFn, data_dir: Path, dev_task: str) -> tuple[float, dict[str, Any] | None]:
    """The dev score and, for a named task, its whole result (what ``evaluate`` gives for that task: a final
    evaluation of the same model reuses it); None for the user's PREFIX:PATH tasks."""
    prefix, _, arg = dev_task.partition(":")
    if prefix in DEV_PREFIXES and arg:
        return DEV_PREFIXES[prefix](encode, user_data_path(arg, data_dir)), None
    if dev_task not in dev_task_names():
        raise ValueError(f"unknown dev task {dev_task!r}; valid: {', '.join(dev_task_names())}")
    result = TASKS[dev_task].evaluate(encode, data_dir, EvalOptions())
    return headline(dev_task, result), result


def format_results(results_by_model: dict[str, dict[str, dict[str, Any]]]) -> str:
    """Tables for every task of ``{model name: {task: result}}``, each by its task's formatter; a result
    that is no named task (the user's pairs:FILE, mteb_hub, ...) as JSON."""
    tasks = list(dict.fromkeys(t for results in results_by_model.values() for t in results))
    parts = []
    for task in tasks:
        column = {name: results[task] for name, results in results_by_model.items() if task in results}
        formatter = TASKS[task].format if task in TASKS else format_json
        parts.append(f"## {task}\n{formatter(column)}")
    return "\n\n".join(parts)
