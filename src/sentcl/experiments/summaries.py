"""Run summaries beside a grid's page: the small files behind each row, committed so a page can be re-checked.

``sentcl experiment`` copies each run's summary next to its page, into
``<output>/<grid>-<variant>/runs/<point slug>[/seed-<seed>]/``: the resolved config (``config.json``), the
training log (``metrics.jsonl``), the final results (``results.json``), the provenance (``provenance.json``)
and, where the run compared with its start, ``start_results.json``. Never weights: a summary is a few KB.

``sentcl experiment GRID --variant V --from-summaries`` rebuilds the page from those files alone (no run
folder, no training), and the test suite checks that every committed page with summaries equals its rebuild.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from sentcl.experiments.grid import GridSpec
from sentcl.experiments.runs import GridRow, row_values
from sentcl.files.artefacts import RUN_CONFIG
from sentcl.files.read import read_typed_json

#: the files of a run folder that make its summary, in the order they are copied; the first two are required (a
#: post-processing point trains nothing, so it has no metrics.jsonl)
SUMMARY_FILES = ("config.json", "results.json", "metrics.jsonl", "provenance.json", "start_results.json")
REQUIRED = SUMMARY_FILES[:2]


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
        folder = target / _relative_run(row)
        tmp = folder.with_name(folder.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name in SUMMARY_FILES:
            if (row.run_dir / name).is_file():
                shutil.copyfile(row.run_dir / name, tmp / name)
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
    return target


def rows_from_summaries(spec: GridSpec, variant: str, source: Path) -> list[GridRow]:
    """The page's rows read from ``source`` (a summaries folder) alone: one per point (x seed) of ``variant``,
    in grid order; each row's run folder is the one its config recorded (``training.output_dir``)."""
    if variant not in spec.variants:
        raise ValueError(f"{spec.path}: no variant {variant!r}; this grid has: {', '.join(spec.variants)}")
    rows = []
    for point in spec.points_for(variant):
        for seed in spec.seeds_for(point):
            folder = source / point.slug / ("" if seed is None else f"seed-{seed}")
            summary, value, extra = row_values(spec, folder / "results.json")  # its fields checked there
            config = read_typed_json(folder / "config.json", RUN_CONFIG, "run summary")
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
                )
            )
    return rows
