"""What every figure of sentcl's pages keeps to, and the helpers that keep it.

- A bar starts at zero; a chart of points whose value axis does not reach zero shows the break on that axis
  (:func:`mark_axis_break`, two short slanted strokes across the axis' bottom end).
- A value over seeds is drawn with its error bar (one sample standard deviation).
- Every axis names its unit.
- A benchmark's figure names its model, data and machine in a caption (:func:`add_caption`).
- No two labels overlap: :func:`place_labels` puts point labels where they collide with nothing drawn
  so far, and :func:`overlapping_texts` measures every text's box with the renderer (``get_window_extent``),
  which is how the tests check a figure.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402  (the backend is chosen first)
from matplotlib.text import Text  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

#: the label a break mark carries, so that a test can find it
BREAK_LABEL = "axis-break"
#: the label of a caption's text artist
CAPTION_LABEL = "caption"
#: offsets (points) tried in turn for a point's label, nearest first
LABEL_OFFSETS: tuple[tuple[int, int], ...] = (
    (5, 4), (5, -11), (-5, 4), (-5, -11), (5, 12), (-5, 12), (5, -19), (-5, -19), (12, -4), (-12, -4),
    (5, 20), (-5, 20), (5, -27), (-5, -27),
)  # fmt: skip


def mark_axis_break(ax: Any) -> bool:
    """Two slanted strokes across the bottom of the y axis when its range does not reach zero (the values are
    points, not bars); returns whether it marked one."""
    low, high = ax.get_ylim()
    if low <= 0 <= high:
        return False
    size = 0.015
    for dy in (0.0, 0.025):
        ax.plot(
            (-size, size),
            (dy - size, dy + size),
            transform=ax.transAxes,
            color="k",
            linewidth=1,
            clip_on=False,
            label=BREAK_LABEL,
        )
    return True


def has_axis_break(ax: Any) -> bool:
    return any(line.get_label() == BREAK_LABEL for line in ax.get_lines())


def add_caption(fig: Figure, text: str, fontsize: float = 7) -> Text:
    """A small caption at the figure's bottom left, wrapped to the figure's width: the model, the data and the
    machine of a benchmark. It lays the figure out (``tight_layout``) above the caption's lines."""
    width_chars = int(fig.get_figwidth() * 72 / (0.58 * fontsize))
    lines = textwrap.wrap(text, width_chars)
    caption = fig.text(
        0.01, 0.01, "\n".join(lines), fontsize=fontsize, color="#444444", ha="left", va="bottom",
        label=CAPTION_LABEL,
    )  # fmt: skip
    bottom = (len(lines) * fontsize * 1.25 + 6) / (fig.get_figheight() * 72)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return caption


def caption_of(fig: Figure) -> str:
    return " ".join(t.get_text() for t in fig.texts if t.get_label() == CAPTION_LABEL)


def _boxes(fig: Figure, artists: Sequence[Any]) -> list[Bbox]:
    renderer = fig.canvas.get_renderer()
    return [a.get_window_extent(renderer) for a in artists]


def visible_texts(fig: Figure) -> list[Text]:
    """Every text the figure draws: titles, axis labels, the tick labels in view, annotations, legends and
    figure texts (non-empty and visible)."""
    fig.canvas.draw()
    found: list[Text] = [*fig.texts]
    if fig._suptitle is not None:  # noqa: SLF001 - matplotlib keeps the suptitle there
        found.append(fig._suptitle)  # noqa: SLF001
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis._update_ticks():  # noqa: SLF001 - the ticks matplotlib draws (in view)
                found += [tick.label1, tick.label2]
            found.append(axis.label)
        found += [ax.title, ax._left_title, ax._right_title, *ax.texts]  # noqa: SLF001
        legend = ax.get_legend()
        if legend is not None:
            found += [*legend.get_texts(), legend.get_title()]
    return [t for t in found if t.get_visible() and t.get_text().strip()]


def texts_outside(fig: Figure) -> list[str]:
    """Texts whose box leaves the figure (a caption or label cut at the edge)."""
    texts = visible_texts(fig)
    frame = fig.bbox
    return [
        t.get_text()
        for t, b in zip(texts, _boxes(fig, texts), strict=True)
        if b.x0 < frame.x0 - 1 or b.y0 < frame.y0 - 1 or b.x1 > frame.x1 + 1 or b.y1 > frame.y1 + 1
    ]


def overlapping_texts(fig: Figure, tolerance: float = 1.0) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes (display pixels, each shrunk by ``tolerance`` on every side) intersect."""
    texts = visible_texts(fig)
    boxes = [
        Bbox.from_extents(b.x0 + tolerance, b.y0 + tolerance, b.x1 - tolerance, b.y1 - tolerance)
        for b in _boxes(fig, texts)
    ]
    return [
        (texts[i].get_text(), texts[j].get_text())
        for (i, a), (j, b) in combinations(enumerate(boxes), 2)
        if a.width > 0 and a.height > 0 and b.width > 0 and b.height > 0 and a.overlaps(b)
    ]


def place_labels(ax: Any, points: Sequence[tuple[str, float, float]], fontsize: float = 7) -> list[Any]:
    """Annotate each (label, x, y) at the first offset of LABEL_OFFSETS whose box overlaps no text drawn so
    far (labels placed before it included) and stays inside the axes; the nearest offset when none does."""
    fig = ax.get_figure()
    fig.canvas.draw()
    taken = _boxes(fig, visible_texts(fig))
    frame = ax.get_window_extent(fig.canvas.get_renderer())
    placed = []
    for label, x, y in points:
        chosen = None
        for dx, dy in LABEL_OFFSETS:
            note = ax.annotate(
                label, (x, y), textcoords="offset points", xytext=(dx, dy), fontsize=fontsize,
                ha="left" if dx >= 0 else "right",
            )  # fmt: skip
            box = _boxes(fig, [note])[0]
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            if inside and not any(box.overlaps(other) for other in taken):
                chosen = note
                break
            note.remove()
        if chosen is None:
            dx, dy = LABEL_OFFSETS[0]
            chosen = ax.annotate(
                label, (x, y), textcoords="offset points", xytext=(dx, dy), fontsize=fontsize
            )
        taken.append(_boxes(fig, [chosen])[0])
        placed.append(chosen)
    return placed
