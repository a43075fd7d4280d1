"""An experiment grid's page: the table the paper would print (metric per point, paper's number beside it) + bar plot."""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sentcl.experiment_runs import GridRow
from sentcl.experiments import METRICS, GridSpec
from sentcl.report.plots import PIXELS, plot_grid_metric


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def grid_table(spec: GridSpec, rows: Sequence[GridRow]) -> str:
    """Markdown: | Point | Overrides | <metric> | Paper | Best step | Run folder |, one row per point."""
    metric = METRICS[spec.metric][2]
    with_paper = bool(spec.paper)
    header = ["Point", "Overrides", metric] + (["Paper"] if with_paper else []) + ["Best step", "Run folder"]
    lines = [
        "| " + " | ".join(header) + " |",
        "|---|---|---:|" + ("---:|" if with_paper else "") + "---:|---|",
    ]
    for row in rows:
        overrides = ", ".join(f"`{o}`" for o in row.point.overrides) or "(base)"
        cells = [row.point.name, overrides, f"{row.value:.2f}"]
        cells += [_fmt(row.paper)] if with_paper else []
        cells += [_fmt(row.best_step), f"`{row.run_dir}`"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


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
    header = ["Point", "Overrides", f"{metric} (mean ± sd)", "Per seed"] + (["Paper"] if with_paper else [])
    lines = [
        "| " + " | ".join(header + ["Run folder"]) + " |",
        "|---|---|---:|---|" + ("---:|" if with_paper else "") + "---|",
    ]
    for summary in by_point(rows):
        first = summary.rows[0]
        overrides = ", ".join(f"`{o}`" for o in first.point.overrides) or "(base)"
        if first.point.postprocess is not None:
            post = first.point.postprocess
            overrides += f"; {post.method} of {post.model}"
        sd = "" if summary.sd is None else f" ± {summary.sd:.2f}"
        seeds = ", ".join(f"{r.seed}: {r.value:.2f}" for r in summary.rows)
        cells = [first.point.name, overrides, f"{summary.mean:.2f}{sd}", seeds]
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
        paper=[r.paper for r in shown] if spec.paper else None,
        title=f"{spec.title} ({variant})",
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
    parts += [f"![{spec.title}]({png.name})", "", f"(Plot: {PIXELS[0]}x{PIXELS[1]} px.)", ""]
    md = output_dir / f"{stem}.md"
    md.write_text("\n".join(parts), encoding="utf-8")
    return md, png


def _shown(path: Path | str) -> str:
    """A path as the page shows it: relative to the working directory when it lies below it (links kept as
    written: ``configs/`` is a link to the packaged recipes, and the page names it as the user does)."""
    try:
        return str(Path(os.path.abspath(path)).relative_to(os.path.abspath(Path.cwd())))
    except ValueError:
        return str(path)
