"""The report page: sources, STS / transfer / alignment-uniformity tables and the figures, as Markdown."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sentcl.evaluation.runner import TASKS
from sentcl.report.collect import ReportSource
from sentcl.report.plots import PIXELS


def _num(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{float(value):.{digits}f}"


def sources_table(sources: Sequence[ReportSource]) -> str:
    """| Name | Source | Kind | Steps | Best step | Dev score |."""
    lines = ["| Name | Source | Kind | Steps | Best step | Dev score |", "|---|---|---|---:|---:|---:|"]
    for s in sources:
        if s.is_run:
            dev = s.summary.get("dev_task", "dev")
            cells = [
                "run",
                str(s.summary.get("global_step", "-")),
                str(s.summary.get("best_step", "-")),
                f"{_num(s.summary.get('best_dev_score'))} ({dev})",
            ]
        else:
            cells = ["model", "-", "-", "-"]
        lines.append(f"| {s.name} | `{s.spec}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def alignment_table(sources: Sequence[ReportSource]) -> str:
    """| Model | ℓ_align | ℓ_uniform | avg. cos (random pairs) |; anisotropy's average cosine where present."""
    lines = ["| Model | ℓ_align | ℓ_uniform | avg. cos |", "|---|---:|---:|---:|"]
    for s in sources:
        au, an = s.results.get("align_uniform"), s.results.get("anisotropy")
        if au is None and an is None:
            continue
        cells = [_num((au or {}).get("alignment"), 4), _num((au or {}).get("uniformity"), 4)]
        cells.append(_num((an or {}).get("average_cosine"), 4))
        lines.append(f"| {s.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def task_columns(sources: Sequence[ReportSource], tasks: Sequence[str]) -> dict[str, Any]:
    """Column name -> result of the first of ``tasks`` a column has: each source's own, and before a run's, its
    start model (in its own pooling, and as the run pooled it) where the run evaluated it on that task."""
    columns: dict[str, Any] = {}
    for s in sources:
        for label, results in s.starts.items():
            task = next((t for t in tasks if t in results), None)
            if task is not None:
                columns[f"{s.name}: {label}"] = results[task]
        task = next((t for t in tasks if t in s.results), None)
        if task is not None:
            columns[s.name] = s.results[task]
    return columns


def render(sources: Sequence[ReportSource], figures: Mapping[str, str], notes: Sequence[str] = ()) -> str:
    """The whole page; ``figures``: PNG file name -> caption."""
    parts = ["# sentcl report", "", sources_table(sources), ""]
    sts = task_columns(sources, ["sts"])
    if sts:
        parts += ["## STS (Spearman x 100, seven tasks)", "", TASKS["sts"].format(sts), ""]
    dev = task_columns(sources, ["stsb_dev", "dev"])  # a source with both: stsb_dev
    if dev:
        parts += ["## STS dev (Spearman x 100)", "", TASKS["dev"].format(dev), ""]
    transfer: dict[str, Any] = {}
    kinds = set()
    for s in sources:
        task = (
            "transfer"
            if "transfer" in s.results
            else "transfer_fast"
            if "transfer_fast" in s.results
            else None
        )
        if task:
            transfer[s.name] = s.results[task]
            kinds.add(task)
    if transfer:
        how = " and ".join(
            {"transfer": "10-fold", "transfer_fast": "5-fold, fast settings (transfer_fast)"}[k]
            for k in sorted(kinds)
        )
        parts += [f"## Transfer (accuracy %, {how})", "", TASKS["transfer"].format(transfer), ""]
    if any("align_uniform" in s.results or "anisotropy" in s.results for s in sources):
        parts += [
            "## Alignment and uniformity (STS-B test, lower is better)",
            "",
            alignment_table(sources),
            "",
        ]
    if figures:
        parts += [
            "## Figures",
            "",
            f"Each figure is {PIXELS[0]}x{PIXELS[1]} px (6.4 x 4.8 in at 100 dpi).",
            "",
        ]
        for name, caption in figures.items():
            parts += [f"### {caption}", "", f"![{caption}]({name})", ""]
    if notes:
        parts += ["## Notes", "", *[f"- {n}" for n in notes], ""]
    return "\n".join(parts)
