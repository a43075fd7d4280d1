"""Read what a report needs from a run folder, a model folder or an offline short name.

A run folder (training.output_dir) holds results.json {best_step, best_dev_score, dev_task, global_step,
results: {task: result}}, metrics.jsonl and best/; its model is ``best/``. A task the report asks for that
results.json lacks is computed by encoding with that model and cached in ``<run>/report_cache.json``
(``<output>/cache/<name>.json`` for a plain model), keyed by a fingerprint of the model's files (relative
path, size, mtime), so a second report is instant and a retrained model is evaluated again.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.evaluation.runner import evaluate, expand
from sentcl.evaluation.sts import write_json
from sentcl.evaluation.transfer import DEFAULT_PROTOCOL as DEFAULT_TRANSFER_PROTOCOL
from sentcl.files.artefacts import ALIGNMENT_RECORD, REPORT_CACHE, RESUME_RECORD, RUN_CONFIG, RUN_RESULTS
from sentcl.files.fields import check
from sentcl.files.fingerprint import model_fingerprint
from sentcl.files.pathcheck import check_input_dir
from sentcl.files.paths import OFFLINE_MODELS
from sentcl.files.read import iter_jsonl, read_typed_json
from sentcl.training.start_columns import TRAINED, read_starts, result_columns

logger = logging.getLogger(__name__)
CACHE_FILE = "report_cache.json"
# a task the report asks for -> results that answer it as well (the full transfer run replaces the fast one)
SUBSTITUTES = {"transfer_fast": ("transfer",)}


@dataclass
class ReportSource:
    """One column of the report: where it came from, its results and (for a run) its training trajectory."""

    spec: str
    name: str
    model: str
    cache_path: Path
    run_dir: Path | None = None
    pooler: str | None = None  # a model source's pooler override (runs use their saved one)
    summary: dict[str, Any] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    trajectory: list[dict[str, float]] = field(default_factory=list)
    # a run's start model beside it (sentcl.training.start_columns): column label -> its task results
    starts: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def is_run(self) -> bool:
        return self.run_dir is not None


def read_trajectory(metrics_path: Path) -> list[dict[str, float]]:
    """[{step, alignment, uniformity}] from the geometry/eval events of metrics.jsonl, in step order.

    A ``resume`` event at step S discards the records above S written before it (the resumed run
    writes them again); a repeated step keeps its last record. Bad lines are errors naming file:line.
    """
    records: list[tuple[int, dict[str, Any]]] = []
    for lineno, record in iter_jsonl(metrics_path):
        if record.get("event") == "resume":
            check(record, RESUME_RECORD, f"{metrics_path}:{lineno}")
            records = [(n, r) for n, r in records if r["step"] <= record["step"]]
        elif record.get("event") in ("geometry", "eval") and "alignment" in record:
            records.append((lineno, check(record, ALIGNMENT_RECORD, f"{metrics_path}:{lineno}")))
    by_step = {int(r["step"]): r for _, r in records}  # later records win
    return [
        {"step": step, "alignment": _number(r["alignment"]), "uniformity": _number(r["uniformity"])}
        for step, r in sorted(by_step.items())
    ]


def _number(value: float | None) -> float:
    return math.nan if value is None else float(value)  # strict JSON writes a NaN as null


def _start_columns(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The run's start model columns, as ``sentcl train``'s table names them (the trained one left out)."""
    as_run, own = read_starts(run_dir)
    pooler = None
    if as_run is not None and own is not None and (run_dir / "config.json").is_file():
        config = read_typed_json(run_dir / "config.json", RUN_CONFIG, "run config")
        pooler = config.get("model", {}).get("pooler")
    columns = result_columns({}, pooler, as_run, own)
    del columns[TRAINED]
    return columns


def open_source(spec: str, cache_dir: Path, pooler: str | None = None) -> ReportSource:
    """A run folder (results.json or best/), a model folder (config.json) or an offline short name.

    ``pooler`` applies to model sources only (a run's best/ keeps the pooler it was trained with); it
    is part of the source's name and cache file, so one model can be shown with several poolers.
    """
    path = Path(spec)
    if path.is_dir() and ((path / "results.json").is_file() or (path / "best").is_dir()):
        source = ReportSource(spec, path.resolve().name, str(path / "best"), path / CACHE_FILE, run_dir=path)
        if (path / "results.json").is_file():
            source.summary = read_typed_json(path / "results.json", RUN_RESULTS, "run results")
            source.results = dict(source.summary["results"])
        if (path / "metrics.jsonl").is_file():
            source.trajectory = read_trajectory(path / "metrics.jsonl")
        source.starts = _start_columns(path)
        if not (path / "best").is_dir():
            raise FileNotFoundError(f"run folder {path} has no best/ model folder")
        return source
    if (path.is_dir() and (path / "config.json").is_file()) or spec in OFFLINE_MODELS:
        name = path.resolve().name if path.is_dir() else spec
        if pooler:
            name = f"{name} ({pooler})"
        slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        return ReportSource(spec, name, spec, cache_dir / f"{slug}.json", pooler=pooler)
    if os.path.lexists(path):  # a file, a FIFO, a link loop: say what it is
        check_input_dir(path, "run or model folder")
    raise FileNotFoundError(
        f"{spec}: not a run folder (results.json or best/), a model folder (config.json) or an offline short "
        f"name ({', '.join(sorted(OFFLINE_MODELS))})"
    )


def compute_tasks(
    model: str,
    tasks: Sequence[str],
    data_dir: Path,
    batch_size: int = ENCODE_BATCH_SIZE,
    pooler: str | None = None,
) -> dict[str, Any]:
    """Evaluate ``model`` (run/best, a folder or short name) on ``tasks``; task -> result."""
    from sentcl.evaluation.embedding import evaluation_encode_fn
    from sentcl.modeling.open import load_encoder

    encoder = load_encoder(model, pooler=pooler)  # None: the saved pooler, as from_pretrained does
    return evaluate(
        evaluation_encode_fn(encoder, batch_size), data_dir, tasks
    )  # the one path, as sentcl eval


def is_current(result: Any, protocol: str = DEFAULT_TRANSFER_PROTOCOL) -> bool:
    """False for a cached transfer result of another protocol, or from before results named their protocol."""
    if not isinstance(result, dict):
        return True
    tasks = [r for r in result.values() if isinstance(r, dict) and "acc" in r]
    return all(r.get("protocol") == protocol for r in tasks)


def _has(results: dict[str, Any], task: str) -> bool:
    return task in results or any(t in results for t in SUBSTITUTES.get(task, ()))


def _read_cache(path: Path) -> dict[str, Any]:
    """The report cache at ``path`` ({} when absent); a damaged one, being sentcl's own, is said and
    computed again (the search cache does the same)."""
    if not path.is_file():
        return {}
    try:
        return read_typed_json(path, REPORT_CACHE, "report cache")
    except ValueError as err:
        logger.warning("%s; evaluating again and rewriting it", err)
        return {}


def ensure_results(
    source: ReportSource, tasks: Sequence[str], data_dir: Path, batch_size: int = ENCODE_BATCH_SIZE
) -> None:
    """Fill ``source.results`` with every task of ``tasks``: results.json, else the cache, else computed now."""
    needed = [t for t in expand(tasks) if not _has(source.results, t)]
    if not needed:
        return
    fingerprint = model_fingerprint(source.model) or source.model
    cached: dict[str, Any] = {}
    payload = _read_cache(source.cache_path)
    if payload:
        if payload.get("model_fingerprint") == fingerprint:
            cached = {t: r for t, r in payload.get("results", {}).items() if is_current(r)}
        else:
            logger.info(
                "%s: the model changed since %s was written; evaluating again", source.name, source.cache_path
            )
    missing = [t for t in needed if not _has(cached, t)]
    if missing:
        logger.info("%s: evaluating %s with %s", source.name, ", ".join(missing), source.model)
        cached.update(compute_tasks(source.model, missing, data_dir, batch_size, source.pooler))
        write_json(
            {"model_fingerprint": fingerprint, "model": source.model, "results": cached}, source.cache_path
        )
    source.results.update({t: cached[t] for t in cached if not _has(source.results, t)})
