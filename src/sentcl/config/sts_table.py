"""The STS tasks by name and how a result is reported: the paper's number per task and the Markdown table.

Pure and torch-free, so a model card (modeling/model_card.py) can print a result without the evaluation code
(evaluation/sts.py computes the results; evaluation/senteval_readers.py reads the files).
"""

from __future__ import annotations

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
    return float(result[task]["all"] if task in YEARLY_STS_TASKS else result[task]["spearman"])


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
        cells = [f"{main_score(res, task):.2f}" if task in res else "-" for res in results.values()]
        lines.append(f"| {row_label(task, results.values())} | " + " | ".join(cells) + " |")
    avg = [f"{float(res['avg']):.2f}" if "avg" in res else "-" for res in results.values()]
    lines.append("| Avg. | " + " | ".join(avg) + " |")
    return "\n".join(lines)
