"""The report's figures, one PNG per plot, all FIGSIZE_IN at DPI: 6.4 x 4.8 in at 100 dpi = 640 x 480 px.

* :func:`plot_alignment_uniformity`: ℓ_align (x) against ℓ_uniform (y) of several models, SimCSE Figure 3;
  lower is better for both, so the best models sit bottom left.
* :func:`plot_trajectory`: (ℓ_align, ℓ_uniform) every evaluation during training, SimCSE Figure 2;
  arrows follow the steps, the first point is the start model.
* :func:`plot_spectrum`: normalised singular values σ_i / σ_1 of the embedding matrix (SimCSE Appendix F).
* :func:`plot_similarity_by_gold`: cos(f(s1), f(s2)) of STS-B pairs as box plots grouped by gold score
  (SimCSE Appendix G).
* :func:`plot_grid_metric`: a grid's metric per point as bars from zero, with error bars over seeds and the
  paper's numbers beside them (:mod:`sentcl.report.figure_rules`).
* :func:`plot_metric_by_dimension`: a score (e.g. STS-B dev Spearman) against the embedding's truncation
  dimension, one line per series (a Matryoshka model, plain SimCSE, several tasks).

Figures are saved without ``bbox_inches="tight"``, which would change the pixel size.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend is chosen first)
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from sentcl.files.atomic import atomic_write  # noqa: E402
from sentcl.report.figure_rules import place_labels  # noqa: E402

FIGSIZE_IN = (6.4, 4.8)
DPI = 100
PIXELS = (round(FIGSIZE_IN[0] * DPI), round(FIGSIZE_IN[1] * DPI))  # (width, height) = (640, 480)


def _new_figure() -> tuple[Figure, Any]:
    fig, ax = plt.subplots(figsize=FIGSIZE_IN, dpi=DPI)
    return fig, ax


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, format="png")
    plt.close(fig)
    return path


def _finish(fig: Figure, ax: Any, path: Path, xlabel: str, ylabel: str, title: str, **style: Any) -> Path:
    """Axis labels (an empty ``xlabel``: none), the title, a light grid and the legend, then save. ``style``:
    ``title_size``, ``grid_axis`` ("both", "y") and ``legend`` (default True)."""
    if xlabel:
        ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, **({"fontsize": style["title_size"]} if "title_size" in style else {}))
    ax.grid(alpha=0.3, axis=style.get("grid_axis", "both"))
    if style.get("legend", True):
        ax.legend(fontsize=8)
    return _save(fig, path)


def plot_alignment_uniformity(points: Mapping[str, tuple[float, float]], path: Path) -> Path:
    """Scatter of model name -> (ℓ_align, ℓ_uniform), each point labelled with its model."""
    fig, ax = _new_figure()
    for align, unif in points.values():
        ax.scatter([align], [unif], s=40)
    xlabel, ylabel = "ℓ_align (lower is better)", "ℓ_uniform (lower is better)"
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title("Alignment and uniformity (STS-B test)")
    ax.grid(alpha=0.3)
    ax.margins(0.15)
    fig.tight_layout()
    place_labels(ax, [(name, x, y) for name, (x, y) in points.items()], fontsize=8)  # no two labels overlap
    return _save(fig, path)


def plot_trajectory(trajectories: Mapping[str, Sequence[Mapping[str, float]]], path: Path) -> Path:
    """Per run, the points {step, alignment, uniformity} in step order joined by arrows, steps annotated."""
    fig, ax = _new_figure()
    for name, points in trajectories.items():
        x = np.array([p["alignment"] for p in points])  # (T,)
        y = np.array([p["uniformity"] for p in points])  # (T,)
        (line,) = ax.plot(x, y, marker="o", markersize=4, label=name)
        for i in range(len(points) - 1):
            ax.annotate(
                "",
                xy=(x[i + 1], y[i + 1]),
                xytext=(x[i], y[i]),
                arrowprops={"arrowstyle": "->", "color": line.get_color()},
            )
        for i in (0, len(points) - 1):
            ax.annotate(
                f"{int(points[i]['step'])}", (x[i], y[i]), xytext=(4, -10), textcoords="offset points"
            )
    return _finish(fig, ax, path, "ℓ_align", "ℓ_uniform", "Training trajectory (STS-B dev; labels are steps)")


def plot_spectrum(spectra: Mapping[str, Sequence[float]], path: Path) -> Path:
    """σ_i / σ_1 against the index i (log y), one line per model."""
    fig, ax = _new_figure()
    for name, sigma in spectra.items():
        ax.plot(np.arange(1, len(sigma) + 1), sigma, label=name)
    ax.set_yscale("log")
    return _finish(fig, ax, path, "index i", "σ_i / σ_1", "Singular spectrum of the embeddings (STS-B test)")


def plot_similarity_by_gold(
    groups_by_model: Mapping[str, Mapping[str, Mapping[str, Any]]], path: Path
) -> Path:
    """Box plots of the cosines in each gold group ("0-1", ..., "4-5"), models side by side in each group."""
    fig, ax = _new_figure()
    models = list(groups_by_model)
    names = list(dict.fromkeys(g for groups in groups_by_model.values() for g in groups))
    width = 0.8 / max(len(models), 1)
    for m, model in enumerate(models):
        data = [list(groups_by_model[model].get(g, {}).get("cosines", [])) for g in names]
        positions = [k + (m - (len(models) - 1) / 2) * width for k in range(len(names))]
        keep = [i for i, d in enumerate(data) if d]  # an empty group has no box
        parts = ax.boxplot(
            [data[i] for i in keep],
            positions=[positions[i] for i in keep],
            widths=width * 0.9,
            patch_artist=True,
            showfliers=False,
        )
        colour = f"C{m % 10}"
        for box in parts["boxes"]:
            box.set_facecolor(colour)
            box.set_alpha(0.6)
        ax.plot([], [], color=colour, linewidth=6, alpha=0.6, label=model)
    ax.set_xticks(range(len(names)), names)
    title = "Cosine similarity by gold score (STS-B test)"
    return _finish(fig, ax, path, "gold similarity group", "cosine similarity", title, grid_axis="y")


def grid_metric_figure(
    labels: Sequence[str],
    values: Sequence[float | None],
    metric_name: str,
    paper: Sequence[float | None] | None = None,
    title: str = "",
    errors: Sequence[float | None] | None = None,
) -> Figure:
    """Bars of ``values`` per grid point from zero (missing: no bar), each value written inside its bar;
    ``errors``: one sample standard deviation over seeds, drawn as an error bar; ``paper`` numbers as a second,
    hatched series."""
    fig, ax = _new_figure()
    x = np.arange(len(labels))
    has_paper = paper is not None and any(v is not None for v in paper)
    width = 0.4 if has_paper else 0.7
    ours = [np.nan if v is None else v for v in values]
    yerr = None if errors is None else [0.0 if e is None else e for e in errors]
    bars = ax.bar(
        x - (width / 2 if has_paper else 0),
        ours,
        width,
        yerr=yerr,
        capsize=3 if yerr else 0,
        label="this run",
    )
    ax.bar_label(bars, fmt="%.1f", fontsize=7, label_type="center", color="white")
    if has_paper and paper is not None:
        theirs = [np.nan if v is None else v for v in paper]
        paper_bars = ax.bar(x + width / 2, theirs, width, label="paper", hatch="//", alpha=0.6)
        ax.bar_label(paper_bars, fmt="%.1f", fontsize=7, label_type="center")
    ax.set_ylim(0, None)  # bars from zero: a difference of a point reads as the small share it is
    ax.set_xticks(x, list(labels), rotation=90, fontsize=8)  # upright boxes: long names never overlap
    if has_paper or yerr:  # the legend in headroom above the tallest bar, never over one
        high = ax.get_ylim()[1]
        ax.set_ylim(0, high * 1.25)
        if yerr:
            ax.errorbar([], [], yerr=[], fmt="none", ecolor="k", capsize=3, label="± 1 sd over seeds")
        ax.legend(loc="upper left", ncol=3, fontsize=8, frameon=False)
    title = "\n".join(textwrap.wrap(title, 70))  # a long grid title on two lines, not cut at the edge
    ax.set_ylabel(f"{metric_name} (Spearman × 100)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def plot_grid_metric(
    labels: Sequence[str],
    values: Sequence[float | None],
    path: Path,
    metric_name: str,
    paper: Sequence[float | None] | None = None,
    title: str = "",
    errors: Sequence[float | None] | None = None,
) -> Path:
    """:func:`grid_metric_figure` saved as a PNG at ``path``."""
    return _save(grid_metric_figure(labels, values, metric_name, paper, title, errors), path)


def plot_metric_by_dimension(
    series: Mapping[str, Mapping[int, float]], path: Path, metric_name: str, title: str = ""
) -> Path:
    """One line per series label: {dimension: score}, dimensions on a log2 x axis (a single series' points
    labelled with their values)."""
    fig, ax = _new_figure()
    dims = sorted({d for values in series.values() for d in values})
    for label, values in series.items():
        xs = sorted(values)
        ys = [values[d] for d in xs]
        ax.plot(xs, ys, marker="o", label=label)
        for x, y in zip(xs, ys, strict=True) if len(series) == 1 else ():  # labels of several would collide
            ax.annotate(
                f"{y:.1f}", (x, y), textcoords="offset points", xytext=(0, 6), fontsize=7, ha="center"
            )
    ax.set_xscale("log", base=2)
    ax.set_xticks(dims, [str(d) for d in dims])
    title = title or f"{metric_name} against the truncation dimension"
    return _finish(
        fig, ax, path, "embedding dimension (first k coordinates)", metric_name, title, title_size=10
    )


#: label offsets (points) tried around a marker, nearest first; each ring further out draws a leader line
def plot_pareto(
    points: Mapping[str, tuple[float, float]],
    front: Sequence[str],
    chosen: str,
    path: Path,
    xlabel: str,
    ylabel: str,
    title: str,
    target: tuple[str, float] | None = None,
) -> Path:
    """Quality (y) against speed (x, log) of named models: the Pareto set joined by a line, the chosen model
    ringed, the target as a dashed line (``("speed", x)`` or ``("quality", y)``); labels never overlap."""
    fig, ax = plt.subplots(figsize=(8, 5.5), dpi=DPI)
    xs, ys = zip(*points.values(), strict=True)
    ax.scatter(xs, ys, s=30, color="C0", zorder=3, label="models")
    line = sorted((points[n] for n in front), key=lambda p: p[0])
    ax.plot([p[0] for p in line], [p[1] for p in line], color="C0", lw=1, label="Pareto set")
    ax.scatter(*points[chosen], s=160, facecolors="none", edgecolors="C3", lw=1.5, zorder=4, label="chosen")
    if target is not None:
        draw = ax.axvline if target[0] == "speed" else ax.axhline
        draw(target[1], color="C2", ls="--", lw=1, label="target")
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    low, high = min(xs), max(xs)
    ax.set_xlim(low / 1.6, high * 1.6)
    spread = max(ys) - min(ys) or 1.0
    ax.set_ylim(min(ys) - 0.25 * spread, max(ys) + 0.25 * spread)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3, which="both")
    legend = {
        "fontsize": 7,
        "loc": "upper center",
        "bbox_to_anchor": (0.5, -0.13),
        "ncol": 4,
        "frameon": False,
    }
    ax.legend(**legend)  # below the axes, where no label goes
    fig.tight_layout()
    place_labels(ax, [(name, x, y) for name, (x, y) in points.items()], fontsize=7)  # no two labels overlap
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=DPI, format="png")
    plt.close(fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(path, lambda handle: handle.write(buffer.getvalue()))
