"""The schema of an experiment grid file (``configs/experiments/*.yaml``), read by the same typed parser as a
recipe (``sentcl.config.typed.from_dict``), so its errors read the same: an unknown key lists the valid ones, a
value of the wrong type names its key. ``sentcl.experiments.grid.load_grid`` checks what spans keys (point names,
variants, the base recipe).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sentcl.config.typed import opt


@dataclass
class GridPaper:
    values: dict[str, Any] = opt({}, "The paper's number for each point name (the page's Paper column).")
    source: str = opt("", "Where the paper's numbers come from (table, section).")
    metric: str | None = opt(
        None,
        "The paper's metric when it is not the grid's (sts_avg: a 7-task average): the numbers stay in the "
        "table and are left out of the plot, whose one axis is the grid's metric.",
    )


@dataclass
class GridFile:
    title: str = opt("", "The results page's title (required).")
    base: str = opt("", "The base recipe every point starts from (required).")
    description: str = opt("", "A paragraph for the results page.")
    metric: str = opt("stsb_dev", "The number each point is judged by.")
    vary: dict[str, Any] | None = opt(None, "One config key and its values: one point per value.")
    points: list[Any] | None = opt(None, "Named points, each with its overrides ('set') and 'variants'.")
    variants: dict[str, Any] | None = opt(None, "Variant name (cpu, full) -> its overrides (required).")
    paper: GridPaper = field(default_factory=GridPaper, metadata={"help": "The paper's numbers."})
    seeds: list[int] | None = opt(None, "Run each point once per seed (distinct whole numbers).")
    also: list[str] | None = opt(
        None, "More metrics shown beside the main one, each a column (sts_avg, ...)."
    )
    tables: list[str] | None = opt(
        None,
        "JSON tables committed beside the page (paths relative to the page's folder), shown under the grid "
        "table: {title, columns, rows, values, notes, command} (e.g. a measured speed table).",
    )
    targets: list[Any] | None = opt(
        None,
        "Targets the page checks: {what, measured: {point|table, metric|value}, against: {...}, compare: "
        "ratio|difference|value, at_least|at_most}.",
    )


#: the keys a grid file may hold
GRID_KEYS = tuple(GridFile.__dataclass_fields__)
