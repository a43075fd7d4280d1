"""Running an experiment grid (``sentcl.experiments.grid`` reads the grid file): each point's run, one row each.

A point whose folder has results.json is not trained again (a grid resumes), one with a checkpoint resumes from
it; either way the folder's saved config must match the point's (``config_differences``), else the grid stops
naming the keys. A post-processing point fits on the start model or on an earlier point's best model
(``sentcl.experiments.postprocess_points``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sentcl.config import ConfigError, TrainConfig, changed_settings
from sentcl.experiments.grid import METRICS, PLACE_KEYS, GridPoint, GridSpec, point_configs
from sentcl.experiments.postprocess_points import START, postprocess_differences, run_postprocess_point
from sentcl.files.artefacts import RUN_CONFIG, RUN_RESULTS
from sentcl.files.read import read_typed_json
from sentcl.training.start_columns import TRAINED, read_starts, result_columns

logger = logging.getLogger(__name__)


def config_differences(run_dir: Path, cfg: TrainConfig, trains: bool = True) -> list[str]:
    """Keys whose value in ``run_dir/config.json`` differs from ``cfg`` (where/how keys ignored).

    A key the saved config lacks (a setting added to sentcl after the run) counts as its default value.
    ``trains=False`` (a post-processing point of the start model, which trains nothing and fits on nothing
    trained): only the keys that say what it computes count, the model's, the evaluation's and the seed
    (POSTPROCESS_KEYS); a grid's training budget may change without evaluating the start model again."""
    saved = read_typed_json(run_dir / "config.json", RUN_CONFIG, "run config")
    return [
        f"{k}: {old!r} in the run, {new!r} now"
        for k, (old, new) in changed_settings(saved, cfg).items()
        if k not in PLACE_KEYS and (trains or k == "training.seed" or k.startswith(POSTPROCESS_KEYS))
    ]


#: the config sections a post-processing point's result depends on (with training.seed): the model it fits
#: on and the evaluation; its fit files and options are compared through its postprocess.json
POSTPROCESS_KEYS = ("model.", "eval.")


@dataclass
class GridRow:
    point: GridPoint
    run_dir: Path
    value: float
    best_step: int | None
    paper: float | None
    reused: bool
    seed: int | None = None  # the grid's seed of this run (None: a grid without seeds)
    extra: dict[str, float] = field(default_factory=dict)  # the grid's ``also`` metrics
    # the start model's metric beside the run's, where the run evaluated it: column label -> value
    starts: dict[str, float] = field(default_factory=dict)


def start_values(spec: GridSpec, folder: Path, pooler: str | None) -> dict[str, float]:
    """The grid metric of the run's start model (its own pooling; as the run pooled it) from a run folder or
    its summary, labelled as ``sentcl train``'s table labels them; a start result without the metric is left
    out (it was evaluated on other tasks)."""
    as_run, own = read_starts(folder)
    columns = result_columns({}, pooler, as_run, own)
    del columns[TRAINED]
    values = {}
    for label, results in columns.items():
        try:
            values[label] = METRICS[spec.metric][1](results)
        except (KeyError, TypeError, ValueError):
            continue
    return values


def row_values(spec: GridSpec, results_file: Path) -> tuple[dict[str, Any], float, dict[str, float]]:
    """(results.json's object, the grid metric, the ``also`` metrics) of one run; an error names the file."""
    summary = read_typed_json(results_file, RUN_RESULTS, "run results")
    values = {}
    for metric in (spec.metric, *spec.also):
        try:
            values[metric] = METRICS[metric][1](summary["results"])
        except KeyError as err:
            raise KeyError(f"{results_file}: no {metric} result ({err.args[0]})") from None
        except (TypeError, ValueError) as err:  # a result object of another shape than the task writes
            raise ValueError(f"{results_file}: results: no usable {metric} score ({err})") from None
    return summary, values[spec.metric], {m: values[m] for m in spec.also}  # also may name the metric too


def run_grid(
    spec: GridSpec,
    variant: str,
    runs_dir: str | Path = "runs/experiments",
    extra_overrides: Sequence[str] = (),
    train_fn: Callable[..., Any] | None = None,
) -> list[GridRow]:
    """Run every point (x seed) of ``variant`` that has no results.json yet; one row per run, in grid order."""
    if train_fn is None:
        from sentcl.training.loop import train as train_fn
    configs = point_configs(spec, variant, runs_dir, extra_overrides)
    trained: dict[tuple[str, int], Path] = {}  # (training point, seed) -> its run folder
    rows = []
    for i, (point, cfg) in enumerate(configs, start=1):
        out = Path(cfg.training.output_dir)
        seed = cfg.training.seed if spec.seeds else None
        where = f"{spec.path}: point {point.name!r}" + ("" if seed is None else f", seed {seed}")
        progress = f"[{i}/{len(configs)}] {point.name}" + ("" if seed is None else f" (seed {seed})")
        if point.postprocess is None:
            done = _train_point(cfg, out, where, progress, train_fn)
            trained[(point.name, cfg.training.seed)] = out
        else:
            post = point.postprocess
            source = None if post.model == START else trained[(post.model, cfg.training.seed)]
            done = (out / "results.json").is_file()
            if done:
                record = post.record(
                    variant, where, cfg.model.name_or_path if source is None else str(source / "best")
                )
                # on the start model, the training keys say nothing about the result; on a trained point they
                # say which training it fits on
                diff = config_differences(out, cfg, trains=source is not None)
                diff += postprocess_differences(out, record)
                if diff:
                    raise ConfigError(
                        f"{where}: the run folder {out} was made with other settings ({'; '.join(diff)}); delete "
                        "the folder or pass another --runs-dir"
                    )
                logger.info("%s: finished in %s, not run again", progress, out)
            else:
                logger.info("%s: %s of %s in %s", progress, post.method, post.model, out)
                run_postprocess_point(post, cfg, variant, where, source)
        summary, value, extra = row_values(spec, out / "results.json")
        starts = start_values(spec, out, cfg.model.pooler)
        rows.append(
            GridRow(
                point,
                out,
                value,
                summary.get("best_step"),
                spec.paper.get(point.name),
                done,
                seed,
                extra,
                starts,
            )
        )
    return rows


def _train_point(
    cfg: TrainConfig, out: Path, where: str, progress: str, train_fn: Callable[..., Any]
) -> bool:
    """Train one point unless its folder has results.json (resume from a checkpoint); True if it had."""
    from sentcl.training.checkpoint import latest_checkpoint

    done = (out / "results.json").is_file()
    resume = not done and latest_checkpoint(out) is not None
    if (done or resume) and (out / "config.json").is_file():
        diff = config_differences(out, cfg)
        if diff:
            raise ConfigError(
                f"{where}: the run folder {out} was trained with another config "
                f"({'; '.join(diff)}); delete the folder or pass another --runs-dir"
            )
    if done:
        logger.info("%s: finished run in %s, not trained again", progress, out)
        return True
    if not resume and (out / "metrics.jsonl").is_file():
        logger.warning("%s: no checkpoint to resume from; training from scratch, old metrics removed", out)
        (out / "metrics.jsonl").unlink()
    logger.info("%s: training in %s%s", progress, out, " (resume)" if resume else "")
    train_fn(cfg, resume=resume)
    return False
