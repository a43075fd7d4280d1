"""The shrink plot's labels: crowded points each get a label that overlaps no other label and no marker."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.text import Text

from sentcl.report.figure_rules import place_labels
from sentcl.report.plots import plot_pareto


def text_box(label: Text, renderer: object) -> object:
    label.update_positions(renderer)
    return Text.get_window_extent(label, renderer)  # the text, not its leader line


def test_crowded_labels_never_overlap() -> None:
    points = {f"model-{i}": (1.0 + 0.01 * i, 90.0 + 0.05 * (i % 3)) for i in range(8)}  # one tight cluster
    points |= {"teacher": (1.0, 100.0), "static-256": (120.0, 92.0), "static-128": (130.0, 91.5)}
    fig, ax = plt.subplots(figsize=(8, 5.5), dpi=100)
    ax.scatter(*zip(*points.values(), strict=True))
    ax.set_xscale("log")
    ax.set_xlim(0.6, 220)
    ax.set_ylim(85, 105)
    fig.tight_layout()
    labels = place_labels(ax, [(name, x, y) for name, (x, y) in points.items()])
    renderer = fig.canvas.get_renderer()
    boxes = [text_box(a, renderer) for a in labels]
    assert len(labels) == len(points)
    assert not [(i, j) for i, a in enumerate(boxes) for j, b in enumerate(boxes) if i < j and a.overlaps(b)]
    frame = ax.get_window_extent(renderer)
    assert all(frame.contains(b.x0, b.y0) and frame.contains(b.x1, b.y1) for b in boxes)
    plt.close(fig)


def test_the_plot_is_written(tmp_path: Path) -> None:
    points = {"teacher": (1.0, 100.0), "l2-int8": (6.0, 96.0), "static-256": (150.0, 93.0)}
    out = plot_pareto(
        points, ["teacher", "l2-int8", "static-256"], "static-256", tmp_path / "p.png",
        "speed (x)", "score, %", "title", ("speed", 10.0),
    )  # fmt: skip
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
