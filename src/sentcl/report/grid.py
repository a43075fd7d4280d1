"""An experiment grid's page: the table the paper would print (metric per point, paper's number beside it) + bar plot."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sentcl.experiments import METRICS, GridRow, GridSpec
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


def write_grid_report(
    spec: GridSpec, variant: str, rows: Sequence[GridRow], output_dir: str | Path, command: str = ""
) -> tuple[Path, Path]:
    """Write ``<output_dir>/<grid>-<variant>[-<metric>].md`` and ``.png`` (metric named unless stsb_dev)."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{spec.name}-{variant}" + ("" if spec.metric == "stsb_dev" else f"-{spec.metric}")
    metric = METRICS[spec.metric][2]
    png = plot_grid_metric(
        [r.point.name for r in rows],
        [r.value for r in rows],
        output_dir / f"{stem}.png",
        metric,
        paper=[r.paper for r in rows] if spec.paper else None,
        title=f"{spec.title} ({variant})",
    )
    parts = [f"# {spec.title} ({variant} variant)", ""]
    if spec.description:
        parts += [spec.description, ""]
    parts += [
        f"Grid `{spec.path}`, base recipe `{_shown(spec.base)}`, variant `{variant}`: "
        + (", ".join(f"`{o}`" for o in spec.variants[variant]) or "no overrides")
        + ".",
        f"Metric: {metric}, Spearman x 100 of the best checkpoint (results.json of each run).",
        "",
    ]
    if command:
        parts += ["```bash", command, "```", ""]
    parts += [grid_table(spec, rows), ""]
    if spec.paper:
        parts += [f"Paper: {spec.paper_source or 'the published numbers'}.", ""]
    parts += [f"![{spec.title}]({png.name})", "", f"(Plot: {PIXELS[0]}x{PIXELS[1]} px.)", ""]
    md = output_dir / f"{stem}.md"
    md.write_text("\n".join(parts), encoding="utf-8")
    return md, png


def _shown(path: Path | str) -> str:
    """A path as the page shows it: relative to the working directory when it lies below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
