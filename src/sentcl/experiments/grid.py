"""Experiment grids: training runs that vary a few settings of a base recipe, and the table the paper prints.

A grid file (``configs/experiments/NAME.yaml``)::

    title: SimCSE Table 3 - dropout rate p
    base: configs/demo.yaml                  # relative to the working directory, else to the grid's folders
    metric: stsb_dev                         # or sts_avg (needs eval.final_tasks to include sts), stsb
    vary: {model.dropout: [0.0, 0.1]}        # optional: the cartesian product of the lists, one point each
    points:                                  # optional: named points with their own overrides
      - {name: fixed 0.1, set: {model.dropout: 0.1, model.same_dropout_mask: true}, variants: [cpu, full]}
    variants: {cpu: {training.max_steps: 60}, full: {model.name_or_path: bert-base-uncased}}
    paper: {source: "Gao et al. 2021, Table 3", values: {"0.0": 71.1, fixed 0.1: 43.6}}
    seeds: [42, 1, 2]                        # optional: every point runs once per seed (training.seed)

A point with ``postprocess: {method: whitening|flow, model: start|POINT, fit_file: ...}`` trains nothing: it
fits whitening or BERT-flow on the start model or on an earlier training point's best model (same seed) and
evaluates that (sentcl.experiments.postprocess_points); ``method: none`` evaluates the model as it is (no fit file). A point
with ``once: true`` runs for the first seed only (its result depends on no seed: the start model, a teacher).

``also: [sts_avg]`` shows more metrics beside ``metric``; ``tables`` and ``targets`` add committed side tables
(a measured speed table) and the targets the page checks (sentcl.experiments.targets).

A point's config is load_config(TrainConfig, base, variant overrides + point overrides + extra overrides)
(later ones win; then ``training.seed`` when the grid has ``seeds``); its run folder is
``<runs_dir>/<grid name>/<variant>/<point slug>`` (``.../<point slug>/seed-<seed>`` with seeds). A point whose folder
has results.json is not trained again (a grid resumes); one with a checkpoint resumes from it: running the points
is ``sentcl.experiments.runs``.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sentcl.config import ConfigError, TrainConfig, from_dict, load_config
from sentcl.config.builtin import builtin_path
from sentcl.config.experiment_schema import GRID_KEYS, GridFile
from sentcl.evaluation.runner import TASKS, expand, headline
from sentcl.experiments.postprocess_points import (
    EVALUATE_ONLY,
    START,
    PostprocessPoint,
    parse_postprocess,
)
from sentcl.experiments.targets import Target, parse_targets
from sentcl.files.read import preview, read_yaml
from sentcl.training.validation import validate

logger = logging.getLogger(__name__)


def _paper_metric(value: object, metric: str, path: Path) -> str | None:
    """``paper.metric``: None when absent or the grid's own; else one of METRICS (an error names the file)."""
    if value is None or value == metric:
        return None
    if value not in METRICS:
        raise ConfigError(f"{path}: paper.metric {value!r} is not valid; choose one of: {', '.join(METRICS)}")
    return str(value)


def _metric(task: str) -> tuple[str, Callable[[Mapping[str, Any]], float], str]:
    """(the final task, its headline score read from results.json's "results", column title): the task's record
    in sentcl.evaluation.runner.TASKS says how."""
    return task, lambda results: headline(task, results[task]), TASKS[task].title


# metric name -> (the final task it needs, how to read it from results.json's "results", column title)
METRICS: dict[str, tuple[str, Callable[[Mapping[str, Any]], float], str]] = {
    "stsb_dev": _metric("stsb_dev"),
    "stsb": _metric("stsb"),
    "sts_avg": _metric("sts"),
}
# config keys that say where or how a run goes, not what it trains: ignored when a finished run is reused
# (training.length_buckets / packed_tokens change how the step's rows are batched, not the loss: exact up to
# float rounding)
PLACE_KEYS = (
    "data.data_dir",
    "training.length_buckets",
    "training.packed_tokens",
    "training.output_dir",
    "training.progress",
    "training.num_threads",
    "training.device",
)


@dataclass(frozen=True)
class GridPoint:
    name: str
    overrides: tuple[str, ...]
    variants: tuple[str, ...] | None = None  # None: every variant
    postprocess: PostprocessPoint | None = None  # a post-processing point: no training
    #: run for the grid's first seed only (a point whose result no seed changes: an evaluation of the start
    #: model, a teacher)
    once: bool = False

    @property
    def slug(self) -> str:
        """Folder name: lower case, runs of other characters -> "-", dots kept only inside numbers (0.1)."""
        text = re.sub(r"(?<![0-9])\.|\.(?![0-9])", "-", self.name.lower())
        return re.sub(r"[^a-z0-9.]+", "-", text).strip("-") or "point"


@dataclass(frozen=True)
class GridSpec:
    path: Path
    title: str
    base: Path
    metric: str
    points: tuple[GridPoint, ...]
    variants: dict[str, tuple[str, ...]]
    paper: dict[str, float] = field(default_factory=dict)
    paper_source: str = ""
    paper_metric: str | None = None  # None: the grid's own metric
    description: str = ""
    seeds: tuple[int, ...] | None = None  # None: each point once, with the recipe's training.seed
    also: tuple[str, ...] = ()  # more metrics shown beside ``metric``
    tables: tuple[str, ...] = ()  # side tables beside the page (sentcl.experiments.targets)
    targets: tuple[Target, ...] = ()

    @property
    def name(self) -> str:
        return self.path.stem

    def points_for(self, variant: str) -> list[GridPoint]:
        return [p for p in self.points if p.variants is None or variant in p.variants]

    def seeds_for(self, point: GridPoint) -> tuple[int | None, ...]:
        """The seeds a point runs with: every grid seed, the first only for a ``once`` point, or (None,)."""
        if not self.seeds:
            return (None,)
        return self.seeds[:1] if point.once else self.seeds


def yaml_value(value: Any) -> str:
    """A value as YAML text that ``yaml.safe_load`` reads back as the same value (1e-5 keeps its float type)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 20).strip()
    return text.removesuffix("...").strip()


def _overrides(mapping: Any, where: str) -> tuple[str, ...]:
    if mapping is None:
        return ()
    if not isinstance(mapping, dict):
        raise ConfigError(f"{where} must be a mapping of config keys to values, got {type(mapping).__name__}")
    return tuple(f"{key}={yaml_value(value)}" for key, value in mapping.items())


def _resolve_base(base: str, grid: Path) -> Path:
    candidates = [Path(base)] if Path(base).is_absolute() else [Path.cwd() / base]
    candidates += [] if Path(base).is_absolute() else [p / base for p in grid.resolve().parents]
    for path in candidates:
        if path.is_file():
            return path
    builtin = builtin_path(base)  # an installed wheel: configs/NAME.yaml is the packaged recipe NAME
    if builtin is not None:
        return builtin
    raise ConfigError(
        f"{grid}: base recipe {base!r} not found (looked in the working directory, above {grid} and in "
        "the built-in recipes)"
    )


def load_grid(path: str | Path) -> GridSpec:
    """Read and check a grid file; every point x variant is built as a config here, so bad keys fail early."""
    path = Path(path)
    data = read_yaml(path, "grid file", ConfigError)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a grid file is a mapping with keys {', '.join(GRID_KEYS)}")
    try:  # the keys and their types, by the recipe's typed parser (errors read the same)
        from_dict(GridFile, data)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None
    for key in ("title", "base", "variants"):
        if key not in data:
            raise ConfigError(f"{path}: missing the grid key {key!r}")
    metric = data.get("metric", "stsb_dev")
    if metric not in METRICS:
        raise ConfigError(f"{path}: metric {metric!r} is not valid; choose one of: {', '.join(METRICS)}")
    points = list(_vary_points(data.get("vary"), path))
    points += _named_points(data.get("points"), path)
    if not points:
        raise ConfigError(f"{path}: the grid has no points (give 'vary' and/or 'points')")
    for key, count in _counts([p.name for p in points]).items():
        if count > 1:
            raise ConfigError(f"{path}: point name {key!r} occurs {count} times; names must be unique")
    for key, count in _counts([p.slug for p in points]).items():
        if count > 1:
            raise ConfigError(f"{path}: several point names give the run folder name {key!r}")
    variants = data["variants"]
    if not isinstance(variants, dict) or not variants:
        raise ConfigError(f"{path}: 'variants' must map variant names (cpu, full) to overrides")
    paper = data.get("paper") or {}
    seeds = data.get("seeds")
    if seeds is not None and (
        not isinstance(seeds, list)
        or not seeds
        or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)
        or len(set(seeds)) < len(seeds)
    ):
        raise ConfigError(f"{path}: 'seeds' must be a list of distinct whole numbers, got {seeds!r}")
    _check_postprocess_sources(points, path)
    also = tuple(str(m) for m in data.get("also") or ())
    bad = [m for m in also if m not in METRICS]
    if bad:
        raise ConfigError(
            f"{path}: also names unknown metric(s) {', '.join(bad)}; valid: {', '.join(METRICS)}"
        )
    tables = tuple(str(t) for t in data.get("tables") or ())
    spec = GridSpec(
        path=path,
        title=str(data["title"]),
        base=_resolve_base(str(data["base"]), path),
        metric=metric,
        points=tuple(points),
        variants={str(v): _overrides(o, f"{path}: variants.{v}") for v, o in variants.items()},
        paper=_paper_values(paper, path),
        paper_source=str(paper.get("source", "")),
        paper_metric=_paper_metric(paper.get("metric"), metric, path),
        description=str(data.get("description", "")).strip(),
        seeds=tuple(seeds) if seeds is not None else None,
        also=also,
        tables=tables,
        targets=parse_targets(data.get("targets"), path, tables),
    )
    for point in points:
        bad = [v for v in point.variants or () if v not in spec.variants]
        if bad:
            raise ConfigError(f"{path}: point {point.name!r} names unknown variant(s) {', '.join(bad)}")
    for variant in spec.variants:
        point_configs(spec, variant)
    names = {p.name for p in points}
    unknown = [
        s.point
        for t in spec.targets
        for s in (t.measured, t.against)
        if s and s.point and s.point not in names
    ]
    if unknown:
        raise ConfigError(f"{path}: targets name unknown point(s) {', '.join(map(repr, unknown))}")
    missing = [k for k in spec.paper if k not in {p.name for p in points}]
    if missing:
        raise ConfigError(f"{path}: paper values for unknown point(s) {', '.join(missing)}")
    return spec


def _check_postprocess_sources(points: Sequence[GridPoint], path: Path) -> None:
    """A post-processing point's ``model`` is ``start`` or an earlier training point run in its variants."""
    for i, point in enumerate(points):
        if point.postprocess is None or point.postprocess.model == START:
            continue
        source = next((p for p in points[:i] if p.name == point.postprocess.model), None)
        if source is None or source.postprocess is not None:
            raise ConfigError(
                f"{path}: point {point.name!r}: postprocess.model must be {START!r} or the name of a training "
                f"point listed before it, got {point.postprocess.model!r}"
            )
        if source.once and not point.once:
            raise ConfigError(
                f"{path}: point {point.name!r} runs for every seed but its model {source.name!r} is 'once'"
            )
        if source.variants is not None and (
            point.variants is None or not set(point.variants) <= set(source.variants)
        ):
            raise ConfigError(
                f"{path}: point {point.name!r} runs in variants where its model {source.name!r} does not"
            )


def _counts(names: Sequence[str]) -> dict[str, int]:
    return {n: names.count(n) for n in dict.fromkeys(names)}


def _named_points(items: Any, path: Path) -> list[GridPoint]:
    """The grid file's ``points``: each a mapping with a name, overrides and optionally variants,
    ``postprocess`` and ``once``."""
    points = []
    for i, item in enumerate(items or []):
        if not isinstance(item, dict) or "name" not in item:
            raise ConfigError(f"{path}: points[{i}] must be a mapping with a 'name' (and 'set', 'variants')")
        extra = set(item) - {"name", "set", "variants", "postprocess", "once"}
        if extra:
            raise ConfigError(f"{path}: points[{i}] has unknown key(s) {', '.join(sorted(extra))}")
        only = item.get("variants")
        overrides = _overrides(item.get("set"), f"{path}: points[{i}].set")
        post = item.get("postprocess")
        post = parse_postprocess(post, f"{path}: point {item['name']!r}") if post is not None else None
        once = item.get("once", False)
        if not isinstance(once, bool):
            raise ConfigError(f"{path}: point {item['name']!r}: 'once' must be true or false, got {once!r}")
        points.append(
            GridPoint(str(item["name"]), overrides, tuple(only) if only is not None else None, post, once)
        )
    return points


def _paper_values(paper: Any, path: Path) -> dict[str, float]:
    """``paper.values``: point name -> the paper's number (a number each; text such as 'n/a' is refused)."""
    values = paper.get("values") if isinstance(paper, dict) else None
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: paper.values must map point names to the paper's numbers")
    out = {}
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ConfigError(
                f"{path}: paper.values.{name} must be a number (the paper's score), got {preview(value)}; "
                "leave out a point the paper does not report"
            )
        out[str(name)] = float(value)
    return out


def _vary_points(vary: Any, path: Path) -> list[GridPoint]:
    if vary is None:
        return []
    if vary == {}:
        return []  # no points from 'vary': the grid needs 'points' then
    if not isinstance(vary, dict) or not all(isinstance(v, list) and v for v in vary.values()):
        raise ConfigError(f"{path}: 'vary' must map config keys to non-empty lists of values")
    keys = list(vary)
    points = []
    for combo in itertools.product(*vary.values()):
        name = (
            yaml_value(combo[0])
            if len(keys) == 1
            else ", ".join(
                f"{k.rsplit('.', 1)[-1]}={yaml_value(v)}" for k, v in zip(keys, combo, strict=True)
            )
        )
        points.append(
            GridPoint(name, tuple(f"{k}={yaml_value(v)}" for k, v in zip(keys, combo, strict=True)))
        )
    return points


def point_configs(
    spec: GridSpec,
    variant: str,
    runs_dir: str | Path = "runs/experiments",
    extra_overrides: Sequence[str] = (),
) -> list[tuple[GridPoint, TrainConfig]]:
    """(point, config) for every point (x seed) of ``variant``; a bad key is a ConfigError naming the grid file
    and point. With ``seeds`` a point comes once per seed, in a row (its config's training.seed differs)."""
    if variant not in spec.variants:
        raise ConfigError(f"{spec.path}: no variant {variant!r}; this grid has: {', '.join(spec.variants)}")
    task = METRICS[spec.metric][0]
    result = []
    runs = [(point, seed) for point in spec.points_for(variant) for seed in spec.seeds_for(point)]
    for point, seed in runs:
        out = Path(runs_dir) / spec.name / variant / point.slug
        if point.postprocess is not None and point.postprocess.method != EVALUATE_ONLY:
            point.postprocess.files_for(variant, f"{spec.path}: point {point.name!r}")
        overrides = [
            *spec.variants[variant],
            *point.overrides,
            *extra_overrides,
            *([] if seed is None else [f"training.seed={seed}"]),
            f"training.output_dir={out if seed is None else out / f'seed-{seed}'}",
        ]
        try:
            cfg = load_config(TrainConfig, spec.base, overrides)
        except ConfigError as err:
            raise ConfigError(f"{spec.path}: point {point.name!r}, variant {variant!r}: {err}") from None
        try:
            validate(cfg, environment=False)  # every rule fails here, not after the points before it trained
        except ConfigError as err:
            raise ConfigError(f"{spec.path}: point {point.name!r}, variant {variant!r}: {err}") from None
        if task not in expand(cfg.eval.final_tasks):
            raise ConfigError(
                f"{spec.path}: metric {spec.metric} needs eval.final_tasks to include {task}; point "
                f"{point.name!r} (variant {variant!r}) has {cfg.eval.final_tasks}"
            )
        result.append((point, cfg))
    return result


def select_points(spec: GridSpec, only: Sequence[str]) -> GridSpec:
    """The grid with only the named points, plus the training points their post-processing needs."""
    names = {p.name for p in spec.points}
    unknown = [n for n in only if n not in names]
    if unknown:
        raise ConfigError(
            f"{spec.path}: no point named {', '.join(map(repr, unknown))}; points: "
            + ", ".join(repr(p.name) for p in spec.points)
        )
    wanted = set(only) | {
        p.postprocess.model for p in spec.points if p.name in only and p.postprocess is not None
    }
    return dataclasses.replace(spec, points=tuple(p for p in spec.points if p.name in wanted))
