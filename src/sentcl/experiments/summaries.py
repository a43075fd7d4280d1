"""Run summaries beside a grid's page: the small files behind each row, committed so a page can be re-checked.

``sentcl experiment`` copies each run's summary next to its page, into
``<output>/<grid>-<variant>/runs/<point slug>[/seed-<seed>]/``: the resolved config (``config.json``), the
training log (``metrics.jsonl``), the final results (``results.json``), the provenance (``provenance.json``)
and, where the run evaluated its start model, ``start_results.json`` and ``start_own_pooling.json``. Never weights: a summary is a few KB.

``summary.json`` records the SHA-256 of each, verified when the page is rebuilt.

``sentcl experiment GRID --variant V --from-summaries`` rebuilds the page from those files alone (no run
folder, no training), after checking each summary's config against its point as the grid file says now (an
edited grid or swapped summaries is refused, naming the keys); the test suite checks that every committed
page with summaries equals its rebuild.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from sentcl.config import ConfigError, TrainConfig
from sentcl.experiments.grid import GridPoint, GridSpec, point_configs
from sentcl.experiments.postprocess_points import START
from sentcl.experiments.runs import GridRow, config_differences, row_values, start_values
from sentcl.files.artefacts import RUN_CONFIG
from sentcl.files.atomic import atomic_write_json
from sentcl.files.fingerprint import file_records, verify_records
from sentcl.files.output import write_folder
from sentcl.files.read import read_json, read_typed_json
from sentcl.training.start_columns import START_OWN_POOLING_FILE, START_RESULTS_FILE

#: the files of a run folder that make its summary, in the order they are copied; the first two are required (a
#: post-processing point trains nothing, so it has no metrics.jsonl)
SUMMARY_FILES = (
    "config.json",
    "results.json",
    "metrics.jsonl",
    "provenance.json",
    START_RESULTS_FILE,
    START_OWN_POOLING_FILE,
)
REQUIRED = SUMMARY_FILES[:2]
#: the SHA-256 of each summary file, written beside them
SUMMARY_RECORD = "summary.json"


def summaries_dir(output_dir: str | Path, spec: GridSpec, variant: str) -> Path:
    """``<output_dir>/<grid>-<variant>/runs``: where the page's run summaries live."""
    return Path(output_dir) / f"{spec.name}-{variant}" / "runs"


def _relative_run(row: GridRow) -> Path:
    """A row's folder below the summaries folder: ``<slug>`` or ``<slug>/seed-<seed>``."""
    slug = Path(row.point.slug)
    return slug if row.seed is None else slug / f"seed-{row.seed}"


def write_summaries(rows: Sequence[GridRow], target: Path) -> Path:
    """Copy each row's summary files from its run folder into ``target/<slug>[/seed-N]`` (replacing what was
    there); a run folder without a required file is an error naming it. Returns ``target``."""
    for row in rows:
        missing = [name for name in REQUIRED if not (row.run_dir / name).is_file()]
        if missing:
            raise FileNotFoundError(f"{row.run_dir}: no {', '.join(missing)}; cannot write its run summary")
    for row in rows:

        def copy(tmp: Path, run_dir: Path = row.run_dir) -> None:
            names = [name for name in SUMMARY_FILES if (run_dir / name).is_file()]
            for name in names:
                shutil.copyfile(run_dir / name, tmp / name)
            atomic_write_json(tmp / SUMMARY_RECORD, {"files": file_records(tmp, names)})

        # a marked temporary sibling swapped in (sentcl.files.output): an earlier summary is replaced, a
        # folder of anything else is refused, and no temporary that is not provably sentcl's is removed
        write_folder(target / _relative_run(row), "summary", copy, "run summary", overwrite=True)
    return target


def verify_summary(folder: Path) -> None:
    """Check a summary's files against the SHA-256 that ``summary.json`` records (none before it existed)."""
    record = folder / SUMMARY_RECORD
    if record.is_file():
        files = read_json(record, dict, "run summary record").get("files")
        verify_records(folder, files, str(record), "copy the summary again from its run (sentcl experiment)")


def _check_config(folder: Path, point: GridPoint, cfg: TrainConfig, seed: int | None) -> None:
    """Refuse a summary whose config is not the point's as the grid file says now (an edited grid, swapped
    summary folders): the page would state the new settings over the old numbers."""
    trains = point.postprocess is None or point.postprocess.model != START
    diff = config_differences(folder, cfg, trains=trains)
    if diff:
        at = f"point {point.name!r}" + ("" if seed is None else f", seed {seed}")
        raise ConfigError(
            f"{folder / 'config.json'}: the run summary of {at} was made with other settings than the grid "
            f"file says now ({'; '.join(diff)}); run the grid again (without --from-summaries) to train "
            "these settings, or restore the grid file"
        )


def rows_from_summaries(
    spec: GridSpec, variant: str, source: Path, overrides: Sequence[str] = ()
) -> list[GridRow]:
    """The page's rows read from ``source`` (a summaries folder) alone: one per point (x seed) of ``variant``,
    in grid order; each row's run folder is the one its config recorded (``training.output_dir``). Each
    summary's config must be its point's (the grid file with ``overrides``; where-keys aside)."""
    if variant not in spec.variants:
        raise ValueError(f"{spec.path}: no variant {variant!r}; this grid has: {', '.join(spec.variants)}")
    configs = {
        (p.name, c.training.seed): c for p, c in point_configs(spec, variant, extra_overrides=overrides)
    }
    rows = []
    for point in spec.points_for(variant):
        for seed in spec.seeds_for(point):
            folder = source / point.slug / ("" if seed is None else f"seed-{seed}")
            summary, value, extra = row_values(spec, folder / "results.json")  # its fields checked there
            config = read_typed_json(folder / "config.json", RUN_CONFIG, "run summary")
            cfg = next(
                c for (name, s), c in configs.items() if name == point.name and (seed is None or s == seed)
            )
            _check_config(folder, point, cfg, seed)
            verify_summary(folder)  # after the readers' own checks: a changed byte that still parses
            run_dir = Path(config.get("training", {}).get("output_dir") or folder)
            rows.append(
                GridRow(
                    point,
                    run_dir,
                    value,
                    summary.get("best_step"),
                    spec.paper.get(point.name),
                    True,
                    seed,
                    extra,
                    start_values(spec, folder, cfg.model.pooler),
                )
            )
    return rows
