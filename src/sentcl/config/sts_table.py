"""The STS tasks by name and how a result is reported: the paper's number per task and the Markdown table.

Pure and torch-free, so a model card (modeling/model_card.py) can print a result without the evaluation code
(evaluation/sts.py computes the results; evaluation/senteval_readers.py reads the files).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

STS_TASKS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness")
#: the SemEval years, each pooled over its subsets ("all"); the others (STS-B, SICK-R) report one Spearman
YEARLY_STS_TASKS = ("STS12", "STS13", "STS14", "STS15", "STS16")
DISPLAY_NAMES = {"STSBenchmark": "STS-B", "SICKRelatedness": "SICK-R"}


def main_score(result: Mapping[str, Any], task: str) -> float:
    """The number the paper reports: STS12-16 "all" Spearman, STS-B/SICK-R Spearman (percent)."""
    if task not in result:
        raise KeyError(
            f"task {task!r} is not in this result (it has: {', '.join(k for k in result if k != 'avg')})"
        )
    value = result[task]["all"] if task in YEARLY_STS_TASKS else result[task]["spearman"]
    return math.nan if value is None else float(value)  # None: an undefined score read back from strict JSON


def score_cell(result: Mapping[str, Any], task: str) -> str:
    """The table's cell for ``task``: Spearman × 100 with two decimals, "-" where the result lacks the task,
    "undefined (WHY)" where no correlation exists (every pair given one cosine: "constant predictions")."""
    if task not in result:
        return "-"
    score = main_score(result, task)
    if math.isfinite(score):
        return f"{score:.2f}"
    return f"undefined ({result[task].get('undefined', 'not a number')})"


def row_label(task: str, results: Iterable[Mapping[str, Any]]) -> str:
    """The row's name: "STS-B", or "STS-B dev" where the results scored another split than test (SICK-R's
    dev split is its trial file); columns of different splits name them all ("STS-B dev/test")."""
    splits = list(dict.fromkeys(str(r[task].get("split", "test")) for r in results if task in r))
    name = DISPLAY_NAMES.get(task, task)
    return name if splits in ([], ["test"]) else f"{name} {'/'.join(splits)}"


def format_sts_table(
    results: Mapping[str, Mapping[str, Any]], title_by_column: Mapping[str, str] | None = None
) -> str:
    """Markdown table: a row per task (STS12-16 "all", STS-B, SICK-R) plus Avg., a column per result.

    ``results``: column key -> evaluate_sts result; ``title_by_column`` optionally renames column headers.
    A task a result lacks shows "-". Numbers are Spearman × 100 with two decimals.
    """
    titles = [(title_by_column or {}).get(col, col) for col in results]
    lines = ["| Task | " + " | ".join(titles) + " |", "|---|" + "---:|" * len(titles)]
    for task in STS_TASKS:
        if not any(task in res for res in results.values()):
            continue
        cells = [score_cell(res, task) for res in results.values()]
        lines.append(f"| {row_label(task, results.values())} | " + " | ".join(cells) + " |")
    avg = [_avg_cell(res) for res in results.values()]
    lines.append("| Avg. | " + " | ".join(avg) + " |")
    return "\n".join(lines)


def _avg_cell(result: Mapping[str, Any]) -> str:
    if "avg" not in result:
        return "-"
    avg = float(result["avg"]) if result["avg"] is not None else math.nan
    return f"{avg:.2f}" if math.isfinite(avg) else "undefined (a task's correlation is undefined)"
