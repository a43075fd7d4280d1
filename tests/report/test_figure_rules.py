"""The figures of sentcl's pages keep the rules of ``sentcl.report.figure_rules``, measured on the figures
themselves with matplotlib's renderer (``get_window_extent``): no two labels overlap and none leaves the figure,
bars start at zero or the points' axis break is marked, seeds have error bars, axes name units, and a benchmark's
figure names its model, data and machine."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.container import BarContainer, ErrorbarContainer  # noqa: E402

from sentcl.report.figure_rules import (  # noqa: E402
    add_caption,
    caption_of,
    has_axis_break,
    mark_axis_break,
    overlapping_texts,
    place_labels,
    texts_outside,
)
from sentcl.report.plots import grid_metric_figure  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
#: a unit on an axis label: in parentheses, a rate, or a named scale
UNIT = re.compile(r"\(.+\)|/s\b|Spearman|share")
MACHINE = re.compile(r"EPYC|Xeon|thread")


def _bench_page() -> Any:
    spec = importlib.util.spec_from_file_location("bench_page", ROOT / "scripts" / "bench_page.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_page"] = module
    spec.loader.exec_module(module)
    return module


def page_figures() -> dict[str, Any]:
    """Every benchmark figure the pages show, built from the committed results as the page builders do."""
    sys.path.insert(0, str(ROOT))
    from bench.frontier_page import figure, newest_run

    script = _bench_page()
    made = {f"benchmarks/{name}": fig for name, fig in script.figures(script.gather()).items()}
    made["results/frontier-cpu.png"] = figure(newest_run(ROOT)[1])
    return made


@pytest.fixture(scope="module")
def figures() -> dict[str, Any]:
    made = page_figures()
    yield made
    for fig in made.values():
        plt.close(fig)


def check_figure(fig: Any, benchmark: bool = True) -> list[str]:
    """The rules a figure breaks, in words (empty: none)."""
    broken = [f"labels overlap: {a!r} and {b!r}" for a, b in overlapping_texts(fig)]
    broken += [f"text leaves the figure: {t!r}" for t in texts_outside(fig)]
    for ax in fig.axes:
        bars = [c for c in ax.containers if isinstance(c, BarContainer)]
        if bars:
            horizontal = bars[0].orientation == "horizontal"
            low = ax.get_xlim()[0] if horizontal else ax.get_ylim()[0]
            if low != 0:
                broken.append(f"bars start at {low}, not 0")
        elif not has_axis_break(ax) and ax.get_ylim()[0] > 0:
            broken.append("points whose axis does not reach zero, and no axis break marked")
        labels = [ax.get_xlabel(), ax.get_ylabel()]
        for label in labels:
            if label and not UNIT.search(label):
                broken.append(f"no unit on the axis {label!r}")
    if benchmark:
        caption = caption_of(fig)
        if not (
            re.search(r"MiniLM|vectors", caption)
            and MACHINE.search(caption)
            and re.search(r"sentences|vectors|wiki", caption)
        ):
            broken.append(f"the caption does not name the model, data and machine: {caption!r}")
    return broken


@pytest.mark.parametrize(
    "name",
    [
        "benchmarks/train.png",
        "benchmarks/encode_quality.png",
        "benchmarks/ann.png",
        "results/frontier-cpu.png",
    ],
)
def test_every_benchmark_figure_keeps_the_rules(figures: dict[str, Any], name: str) -> None:
    assert check_figure(figures[name]) == []


def test_a_grid_with_seeds_draws_bars_from_zero_with_error_bars() -> None:
    labels = ["dropout_0.0", "dropout_0.1 (the paper)", "dropout_0.2", "fixed_0.1", "dropout_0.5_long_name"]
    fig = grid_metric_figure(
        labels, [80.1, 81.9, 81.5, 43.0, 80.0], "STS-B dev", errors=[0.2, 0.4, 0.3, 1.0, 0.2]
    )
    try:
        ax = fig.axes[0]
        assert any(isinstance(c, ErrorbarContainer) for c in ax.containers)
        assert check_figure(fig, benchmark=False) == []
    finally:
        plt.close(fig)


def test_the_checks_find_each_broken_rule() -> None:
    """A figure that breaks every rule: cut bars, overlapping labels, a unitless axis, no caption."""
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.bar(["a", "b"], [80.2, 80.6])
    ax.set_ylim(80, 81)  # a 0.4 spread filling half the height
    ax.set_ylabel("score")
    ax.annotate("first label here", (0, 80.5))
    ax.annotate("second label", (0, 80.5), xytext=(2, 1), textcoords="offset points")
    fig.text(0.9, 0.5, "a caption running off the right edge of the figure")
    try:
        broken = check_figure(fig)
        assert any(b.startswith("labels overlap") for b in broken)
        assert any(b.startswith("text leaves the figure") for b in broken)
        assert "bars start at 80.0, not 0" in broken
        assert "no unit on the axis 'score'" in broken
        assert any(b.startswith("the caption does not name") for b in broken)
    finally:
        plt.close(fig)


def test_the_axis_break_is_marked_only_when_zero_is_out_of_range() -> None:
    fig, (a, b) = plt.subplots(1, 2)
    a.plot([1, 2], [70, 80])
    b.plot([1, 2], [-1, 80])
    try:
        assert mark_axis_break(a) and has_axis_break(a)
        assert not mark_axis_break(b) and not has_axis_break(b)
    finally:
        plt.close(fig)


def test_placed_labels_of_crowded_points_overlap_nothing() -> None:
    fig, ax = plt.subplots(figsize=(6, 4))
    points = [(f"point-{i}", 1.0 + 0.01 * i, 78.0 + 0.02 * i) for i in range(6)]
    ax.scatter([p[1] for p in points], [p[2] for p in points])
    ax.set_xlim(0.5, 1.6)
    ax.set_ylim(77, 79)
    add_caption(fig, "a model; some data; a machine with one thread " * 4)
    try:
        naive = [ax.annotate(n, (x, y), xytext=(5, 4), textcoords="offset points") for n, x, y in points]
        assert overlapping_texts(fig)  # the same offset for every point collides
        for note in naive:
            note.remove()
        place_labels(ax, points)
        assert overlapping_texts(fig) == [] and texts_outside(fig) == []
    finally:
        plt.close(fig)


def test_the_report_figures_keep_the_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report's figures (``sentcl report``, ``eval --truncate-dims --plot``) on crowded inputs: models whose
    points sit close, several series, long names. Each figure is laid out as saved, then measured."""
    import sentcl.report.plots as plots

    made: list[Any] = []

    def keep(fig: Any, path: Path) -> Path:
        fig.tight_layout()
        made.append(fig)
        return path

    monkeypatch.setattr(plots, "_save", keep)
    close = {f"model-{i}": (0.20 + 0.002 * i, -2.10 - 0.003 * i) for i in range(5)}
    plots.plot_alignment_uniformity(
        {**close, "unsup-simcse-bert-base-uncased": (0.25, -2.4)}, tmp_path / "a.png"
    )
    plots.plot_metric_by_dimension(
        {"matryoshka": {32: 70.1, 64: 74.2, 128: 76.0, 384: 77.3}},
        tmp_path / "b.png",
        "STS-B dev (Spearman × 100)",
    )
    plots.plot_spectrum({"a": [1.0, 0.5, 0.2, 0.1], "b": [1.0, 0.3, 0.1, 0.05]}, tmp_path / "c.png")
    try:
        for fig in made:
            assert [b for b in check_figure(fig, benchmark=False) if b.startswith(("labels", "text"))] == []
    finally:
        for fig in made:
            plt.close(fig)
