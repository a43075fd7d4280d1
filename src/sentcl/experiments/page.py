"""An experiment grid's page: the table the paper would print (metric per point, paper's number beside it) + bar plot."""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sentcl.experiments.grid import METRICS, GridSpec
from sentcl.experiments.runs import GridRow
from sentcl.experiments.targets import read_table, table_markdown, targets_markdown
from sentcl.report.plots import plot_grid_metric


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def start_labels(rows: Sequence[GridRow]) -> list[str]:
    """The start-model columns any row has, in the order ``sentcl train``'s table gives them."""
    return list(dict.fromkeys(label for row in rows for label in row.starts))


def _starts(labels: Sequence[str], rows: Sequence[GridRow]) -> list[str]:
    """One cell per start column: the rows' mean (the start model is the same for each seed), else "-"."""
    cells = []
    for label in labels:
        values = [r.starts[label] for r in rows if label in r.starts]
        cells.append(f"{statistics.fmean(values):.2f}" if values else "-")
    return cells


def grid_table(spec: GridSpec, rows: Sequence[GridRow]) -> str:
    """Markdown: | Point | Overrides | <metric> | Paper | Best step | Run folder |, one row per point."""
    metric = METRICS[spec.metric][2]
    with_paper = bool(spec.paper)
    also = [METRICS[m][2] for m in spec.also]
    starts = start_labels(rows)  # beside the result, as sentcl train's table
    header = (
        ["Point", "Overrides", *starts, metric, *also]
        + (["Paper"] if with_paper else [])
        + ["Best step", "Run folder"]
    )
    lines = [
        "| " + " | ".join(header) + " |",
        "|---|---|"
        + "---:|" * len(starts)
        + "---:|"
        + "---:|" * len(also)
        + ("---:|" if with_paper else "")
        + "---:|---|",
    ]
    for row in rows:
        overrides = ", ".join(f"`{o}`" for o in row.point.overrides) or "(base)"
        cells = [row.point.name, overrides, *_starts(starts, [row]), f"{row.value:.2f}"]
        cells += [f"{row.extra[m]:.2f}" for m in spec.also]
        cells += [_fmt(row.paper)] if with_paper else []
        cells += [_fmt(row.best_step), f"`{row.run_dir}`"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _mean_sd(values: Sequence[float]) -> str:
    """``mean ± sd`` (sample sd), or the mean alone for one value."""
    mean = statistics.fmean(values)
    return f"{mean:.2f}" + (f" ± {statistics.stdev(values):.2f}" if len(values) > 1 else "")


@dataclass(frozen=True)
class PointSummary:
    """One point of a grid with seeds: its runs' values, their mean and sample standard deviation."""

    rows: tuple[GridRow, ...]

    @property
    def values(self) -> list[float]:
        return [r.value for r in self.rows]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def sd(self) -> float | None:
        return statistics.stdev(self.values) if len(self.rows) > 1 else None


def by_point(rows: Sequence[GridRow]) -> list[PointSummary]:
    """Rows (one per point and seed) grouped per point, in grid order."""
    groups: dict[str, list[GridRow]] = {}
    for row in rows:
        groups.setdefault(row.point.name, []).append(row)
    return [PointSummary(tuple(group)) for group in groups.values()]


def seed_table(spec: GridSpec, rows: Sequence[GridRow]) -> str:
    """Markdown: | Point | Overrides | <metric> mean ± sd | Per seed | Paper | Run folder |, one row per point."""
    metric = METRICS[spec.metric][2]
    with_paper = bool(spec.paper)
    also = [f"{METRICS[m][2]} (mean ± sd)" for m in spec.also]
    starts = start_labels(rows)  # beside the result, as sentcl train's table
    header = ["Point", "Overrides", *starts, f"{metric} (mean ± sd)", "Per seed", *also]
    header += ["Paper"] if with_paper else []
    lines = [
        "| " + " | ".join(header + ["Run folder"]) + " |",
        "|---|---|"
        + "---:|" * len(starts)
        + "---:|---|"
        + "---:|" * len(also)
        + ("---:|" if with_paper else "")
        + "---|",
    ]
    for summary in by_point(rows):
        first = summary.rows[0]
        overrides = ", ".join(f"`{o}`" for o in first.point.overrides) or "(base)"
        if first.point.postprocess is not None:
            post = first.point.postprocess
            overrides += f"; {post.method} of {post.model}"
        seeds = ", ".join(f"{r.seed}: {r.value:.2f}" for r in summary.rows)
        cells = [first.point.name, overrides, *_starts(starts, summary.rows), _mean_sd(summary.values), seeds]
        cells += [_mean_sd([r.extra[m] for r in summary.rows]) for m in spec.also]
        cells += [_fmt(first.paper)] if with_paper else []
        cells += [f"`{first.run_dir.parent}`"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_grid_report(
    spec: GridSpec,
    variant: str,
    rows: Sequence[GridRow],
    output_dir: str | Path,
    command: str = "",
    summaries: Path | None = None,
) -> tuple[Path, Path]:
    """Write ``<output_dir>/<grid>-<variant>[-<metric>].md`` and ``.png`` (metric named unless stsb_dev);
    ``summaries``: the folder of the rows' run summaries (report.summaries), named on the page."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{spec.name}-{variant}" + ("" if spec.metric == "stsb_dev" else f"-{spec.metric}")
    metric = METRICS[spec.metric][2]
    shown = [s.rows[0] for s in by_point(rows)] if spec.seeds else list(rows)  # one bar per point
    means = [s.mean for s in by_point(rows)] if spec.seeds else [r.value for r in rows]
    png = plot_grid_metric(
        [r.point.name for r in shown],
        means,
        output_dir / f"{stem}.png",
        metric,
        paper=[r.paper for r in shown] if spec.paper and spec.paper_metric is None else None,  # one axis
        title=f"{spec.title} ({variant})",
        errors=[s.sd for s in by_point(rows)] if spec.seeds else None,
    )
    parts = [f"# {spec.title} ({variant} variant)", ""]
    if spec.description:
        parts += [spec.description, ""]
    parts += [
        f"Grid `{spec.path}`, base recipe `{_shown(spec.base)}`, variant `{variant}`: "
        + (", ".join(f"`{o}`" for o in spec.variants[variant]) or "no overrides")
        + ".",
        f"Metric: {metric}, Spearman x 100 of the best checkpoint (results.json of each run)"
        + (
            f"; mean ± sample standard deviation over seeds {', '.join(map(str, spec.seeds))}."
            if spec.seeds
            else "."
        ),
        "",
    ]
    if command:
        parts += ["```bash", command, "```", ""]
    parts += [seed_table(spec, rows) if spec.seeds else grid_table(spec, rows), ""]
    parts += _side_sections(spec, rows, output_dir / f"{spec.name}-{variant}")
    if summaries is not None:
        shown = summaries.relative_to(output_dir) if summaries.is_relative_to(output_dir) else summaries
        parts += [
            f"Run summaries behind each row (resolved config, metrics.jsonl, results.json, provenance; no "
            f"weights): `{shown.as_posix()}/`, beside this page. `{command or 'sentcl experiment'} "
            "--from-summaries` rebuilds this page from them alone.",
            "",
        ]
    if spec.paper:
        parts += [f"Paper: {spec.paper_source or 'the published numbers'}.", ""]
    if spec.paper and spec.paper_metric is not None:
        parts += [
            f"The plot shows {metric} only: the paper's numbers are {METRICS[spec.paper_metric][2]}.",
            "",
        ]
    parts += [f"![{spec.title}]({png.name})", ""]
    md = output_dir / f"{stem}.md"
    md.write_text("\n".join(parts), encoding="utf-8")
    return md, png


def _side_sections(spec: GridSpec, rows: Sequence[GridRow], page_dir: Path) -> list[str]:
    """The page's targets and side tables (sentcl.experiments.targets), read from ``page_dir`` (the folder beside
    the page that holds its run summaries)."""
    tables = {name: read_table(page_dir, name) for name in spec.tables}

    def point_values(point: str, metric: str | None) -> list[float]:
        chosen = [r for r in rows if r.point.name == point]
        return [r.value if metric in (None, spec.metric) else r.extra[metric] for r in chosen]

    parts = []
    if spec.targets:
        parts += ["## Targets", "", targets_markdown(spec.targets, point_values, tables), ""]
    for name in spec.tables:
        parts += [table_markdown(tables[name]), "", f"(From `{page_dir.name}/{name}`, beside this page.)", ""]
    return parts


def _shown(path: Path | str) -> str:
    """A path as the page shows it: relative to the working directory when it lies below it (links kept as
    written: ``configs/`` is a link to the packaged recipes, and the page names it as the user does)."""
    try:
        return str(Path(os.path.abspath(path)).relative_to(os.path.abspath(Path.cwd())))
    except ValueError:
        return str(path)
