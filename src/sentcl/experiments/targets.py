"""A grid page's targets and its committed side tables (e.g. a measured speed table).

A grid file may name JSON tables that live beside its page (``tables: [distillation-cpu/speed.json]``,
relative to the page's folder) and targets the page checks (``targets:``). A side table is the JSON object a
bench writes::

    {"title": "Encode speed", "columns": ["model", "sentences/s"], "rows": [["teacher", 812.4]],
     "values": {"student_speedup": 2.1}, "notes": "...", "command": "python bench/... --out ..."}

A target compares a measured number with a bound, optionally relative to another number::

    - what: the 3-layer student keeps >= 97% of the teacher's STS average
      measured: {point: "L3 (MSE)"}            # the point's mean of the grid metric (or metric: NAME)
      against: {point: teacher}                # optional
      compare: ratio                           # ratio (measured / against), difference (measured - against)
      at_least: 0.97                           # or value (measured alone); at_least and/or at_most

``{table: speed.json, value: KEY}`` reads ``values[KEY]`` of a side table. The page shows each target with
what was measured, what was needed and whether it was met (or by how much it was missed).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sentcl.config.typed import ConfigError
from sentcl.files.read import read_json

COMPARISONS = ("ratio", "difference", "value")
_SOURCE_KEYS = ("point", "metric", "table", "value")


@dataclass(frozen=True)
class Source:
    """One number: the mean of a point's metric (``point``, ``metric``) or a side table's value."""

    point: str | None = None
    metric: str | None = None
    table: str | None = None
    value: str | None = None

    def label(self) -> str:
        if self.point is not None:
            return f"{self.point}" + (f" ({self.metric})" if self.metric else "")
        return f"{self.value} ({self.table})"


@dataclass(frozen=True)
class Target:
    what: str
    measured: Source
    compare: str
    against: Source | None = None
    at_least: float | None = None
    at_most: float | None = None


def _source(value: Any, where: str) -> Source:
    if not isinstance(value, Mapping) or set(value) - set(_SOURCE_KEYS):
        raise ConfigError(
            f"{where} must be a mapping with keys among {', '.join(_SOURCE_KEYS)}, got {value!r}"
        )
    source = Source(**{k: str(v) for k, v in value.items()})
    if (source.point is None) == (source.table is None):
        raise ConfigError(f"{where} needs exactly one of 'point' or 'table', got {dict(value)!r}")
    if source.table is not None and source.value is None:
        raise ConfigError(f"{where}: a table source needs 'value' (a key of the table's values)")
    return source


def parse_targets(items: Sequence[Any] | None, path: Path, tables: Sequence[str]) -> tuple[Target, ...]:
    """The grid file's ``targets``, checked: an error names the grid file and the target."""
    targets = []
    for i, item in enumerate(items or ()):
        where = f"{path}: targets[{i}]"
        known = {"what", "measured", "against", "compare", "at_least", "at_most"}
        if not isinstance(item, Mapping) or set(item) - known or "what" not in item or "measured" not in item:
            raise ConfigError(
                f"{where} must be a mapping with 'what', 'measured' and keys among {sorted(known)}"
            )
        compare = str(item.get("compare", "value"))
        if compare not in COMPARISONS:
            raise ConfigError(f"{where}: compare must be one of {', '.join(COMPARISONS)}, got {compare!r}")
        against = _source(item["against"], f"{where}.against") if "against" in item else None
        if (against is None) != (compare == "value"):
            raise ConfigError(
                f"{where}: compare {compare!r} " + ("needs" if against is None else "takes no") + " 'against'"
            )
        bounds = {k: item.get(k) for k in ("at_least", "at_most")}
        if all(v is None for v in bounds.values()) or not all(
            v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in bounds.values()
        ):
            raise ConfigError(f"{where} needs a number in at_least and/or at_most, got {bounds!r}")
        target = Target(
            str(item["what"]),
            _source(item["measured"], f"{where}.measured"),
            compare,
            against,
            **{k: None if v is None else float(v) for k, v in bounds.items()},
        )
        for source in (target.measured, target.against):
            if source is not None and source.table is not None and source.table not in tables:
                raise ConfigError(
                    f"{where}: table {source.table!r} is not in the grid's 'tables' {list(tables)}"
                )
        targets.append(target)
    return tuple(targets)


def read_table(page_dir: Path, name: str) -> dict[str, Any]:
    """A side table beside the page (a JSON object with ``columns`` and ``rows`` lists); errors name the file."""
    path = page_dir / name
    data = read_json(path, dict, "a side table of the page (grid file 'tables')")
    if not isinstance(data.get("columns"), list) or not isinstance(data.get("rows"), list):
        raise ValueError(f"{path}: a side table is a JSON object with 'columns' and 'rows' lists")
    return data


def _cell(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def table_markdown(data: Mapping[str, Any]) -> str:
    """A side table as Markdown: its title, the table, its notes and the command that measured it."""
    columns = [str(c) for c in data["columns"]]
    lines = [f"### {data.get('title', 'Measured')}", ""] if data.get("title") else []
    lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in data["rows"]:
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    if data.get("notes"):
        lines += ["", str(data["notes"])]
    if data.get("command"):
        lines += ["", "```bash", str(data["command"]), "```"]
    return "\n".join(lines)


#: (point name, metric or None for the grid's own) -> the point's values over its runs
PointValues = Callable[[str, str | None], list[float]]


def _number(source: Source, point_values: PointValues, tables: Mapping[str, Mapping[str, Any]]) -> float:
    if source.point is not None:
        values = point_values(source.point, source.metric)
        if not values:
            raise KeyError(f"target: no runs of point {source.point!r}")
        return statistics.fmean(values)
    values = tables[str(source.table)].get("values") or {}
    if source.value not in values:
        raise KeyError(f"target: the table {source.table} has no value {source.value!r}")
    return float(values[source.value])


def targets_markdown(
    targets: Sequence[Target], point_values: PointValues, tables: Mapping[str, Mapping[str, Any]]
) -> str:
    """| Target | Measured | Needed | Met |: each target with its number and how far it is from the bound."""
    lines = ["| Target | Measured | Needed | Met |", "|---|---:|---|---|"]
    for t in targets:
        try:
            measured = _number(t.measured, point_values, tables)
            base = None if t.against is None else _number(t.against, point_values, tables)
        except KeyError as err:  # a page of some points only (--only): the target cannot be checked yet
            lines.append(f"| {t.what} | not measured ({err.args[0].removeprefix('target: ')}) | - | - |")
            continue
        got, shown = measured, f"{measured:.2f}"
        if base is not None and t.compare == "ratio":
            got = measured / base
            shown = f"{got:.3f} ({measured:.2f} / {base:.2f})"
        elif base is not None:
            got = measured - base
            shown = f"{got:+.2f} ({measured:.2f} − {base:.2f})"
        needed, misses = [], []
        if t.at_least is not None:
            needed.append(f"≥ {t.at_least:g}")
            misses += [f"short by {t.at_least - got:.3g}"] if got < t.at_least else []
        if t.at_most is not None:
            needed.append(f"≤ {t.at_most:g}")
            misses += [f"over by {got - t.at_most:.3g}"] if got > t.at_most else []
        met = "yes" if not misses else "no, " + ", ".join(misses)
        lines.append(f"| {t.what} | {shown} | {' and '.join(needed)} | {met} |")
    return "\n".join(lines)
