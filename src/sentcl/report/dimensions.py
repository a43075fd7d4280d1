"""Scores against the embedding's truncation dimension (Matryoshka models): ``sentcl eval --truncate-dims``.

The model is evaluated once per dimension k on its first k coordinates (cosine is scale-free, so the prefix
is used as it is), the same vectors as ``sentcl eval --truncate-dim k`` gives, from one full-width encoding
of each sentence list. Each task's headline score (STS: Spearman x 100) per dimension can be
drawn with :func:`sentcl.report.plots.plot_metric_by_dimension`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.similarity import unit_rows
from sentcl.types import EncodeFn

Results = dict[str, dict[str, Any]]


def truncation_sweep(
    model: Any, dims: Sequence[int], evaluate_at: Callable[[EncodeFn], Results], encode: EncodeFn
) -> dict[int, Results]:
    """{k: evaluate_at(encode truncated to k)} for each k of ``dims``.

    Each distinct list of sentences is encoded once at the full width (``encode`` with the model's own
    truncation lifted, restored afterwards) and cut to its first k coordinates for every k, re-normalised
    where the model's output is normalised: the same vectors as ``--truncate-dim k``, one forward pass."""
    if not hasattr(model, "set_truncate_dim"):
        raise ValueError("--truncate-dims needs a single PyTorch encoder (add --backend torch)")
    for k in dims:  # every dimension checked before the first (slow) evaluation
        if k > model.full_embedding_dim:
            raise ValueError(f"--truncate-dims: {k} exceeds the embedding size {model.full_embedding_dim}")
    full: dict[tuple[str, ...], np.ndarray] = {}

    def full_width(sentences: list[str]) -> np.ndarray:
        key = tuple(sentences)
        if key not in full:
            full[key] = np.asarray(encode(sentences), dtype=np.float32)  # (N, D)
        return full[key]

    def prefix_encoder(k: int) -> EncodeFn:
        def encode_prefix(sentences: list[str]) -> np.ndarray:
            prefix = full_width(sentences)[:, :k]  # (N, k)
            if model.normalize_output:
                prefix = unit_rows(prefix)  # (N, k)
            return prefix

        return encode_prefix

    previous = model.truncate_dim
    model.set_truncate_dim(None)
    try:
        return {k: evaluate_at(prefix_encoder(k)) for k in dims}
    finally:
        model.set_truncate_dim(previous)


def _headline(task: str, result: Mapping[str, Any]) -> float | None:
    from sentcl.evaluation.runner import headline

    try:
        return float(headline(task, result))
    except (ValueError, KeyError, TypeError):
        value = result.get("spearman") if isinstance(result, Mapping) else None  # a user's pairs file
        return float(value) if isinstance(value, int | float) else None


def scores_by_dimension(sweep: Mapping[int, Results]) -> dict[str, dict[int, float]]:
    """{task: {k: headline score}} for every task of the sweep that has one."""
    series: dict[str, dict[int, float]] = {}
    for k, results in sweep.items():
        for task, result in results.items():
            score = _headline(task, result)
            if score is not None:
                series.setdefault(task, {})[k] = score
    return series


def plot_sweep(sweep: Mapping[int, Results], path: Path, label: str = "") -> Path:
    """The PNG of each task's headline score against the dimension (one line per task)."""
    from sentcl.report.plots import plot_metric_by_dimension

    series = scores_by_dimension(sweep)
    if not series:
        raise ValueError("--plot: none of the evaluated tasks has a headline score to draw")
    named = {f"{label} {task}".strip(): values for task, values in series.items()}
    return plot_metric_by_dimension(named, path, "score (Spearman x 100 for STS)")


def read_sweep(path: str | Path) -> dict[int, Results]:
    """The sweep of a ``sentcl eval --truncate-dims ... --output FILE`` JSON file: {k: results}."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("truncate_dims"), dict):
        raise ValueError(
            f"{path}: not the output of `sentcl eval --truncate-dims` (no 'truncate_dims' object)"
        )
    return {int(k): v for k, v in data["truncate_dims"].items()}


def plot_sweeps(files: Mapping[str, str | Path], path: Path, task: str = "stsb_dev") -> Path:
    """Several models' sweeps (label -> eval JSON file) in one PNG: ``task``'s score against the dimension."""
    from sentcl.report.plots import plot_metric_by_dimension

    series = {}
    for label, file in files.items():
        scores = scores_by_dimension(read_sweep(file))
        if task not in scores:
            raise ValueError(
                f"{file}: no {task!r} results in its sweep; tasks: {', '.join(scores) or 'none'}"
            )
        series[label] = scores[task]
    return plot_metric_by_dimension(series, path, f"{task} (Spearman x 100)")
