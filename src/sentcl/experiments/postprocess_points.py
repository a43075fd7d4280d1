"""Post-processing points of an experiment grid (sentcl.experiments.grid): no training, a results.json all the same.

A point ``postprocess: {method: whitening|flow, model: start|POINT, fit_file: FILE | [FILES] | {variant: FILE},
...options}`` fits ``method`` on the vectors of the fit file(s) (relative to the data folder) of

- ``start``: the model the grid's training points start from (the point's config: model.name_or_path with its
  pooler, e.g. ``set: {model.pooler: avg_first_last}``), or
- ``POINT``: the best model (``best/``) of that training point of the grid, for the same seed,

then evaluates it on the config's ``eval.final_tasks`` and writes ``results.json`` (with the fit record) and
``postprocess.json`` into its run folder. The post-processed model itself is not kept (``sentcl postprocess``
makes it again from the same inputs).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from sentcl.config import ConfigError, TrainConfig, to_dict
from sentcl.postprocess.fit import METHODS, PostprocessSettings

logger = logging.getLogger(__name__)

OPTION_KEYS = tuple(f.name for f in fields(PostprocessSettings) if f.name not in ("method", "seed"))
SPEC_KEYS = ("method", "model", "fit_file", *OPTION_KEYS)
START = "start"
#: ``postprocess: {method: none, model: ...}``: evaluate the model as it is (no fit, no fit file)
EVALUATE_ONLY = "none"


@dataclass(frozen=True)
class PostprocessPoint:
    method: str
    model: str  # "start" or the name of a training point
    fit_files: Mapping[str, tuple[str, ...]] | tuple[str, ...]  # per variant, or for every variant
    options: tuple[tuple[str, Any], ...] = ()

    def files_for(self, variant: str, where: str) -> tuple[str, ...]:
        if isinstance(self.fit_files, tuple):
            return self.fit_files
        if variant not in self.fit_files:
            raise ConfigError(f"{where}: postprocess.fit_file names no file for variant {variant!r}")
        return self.fit_files[variant]

    def settings(self, seed: int) -> PostprocessSettings:
        return PostprocessSettings(method=self.method, seed=seed, **dict(self.options))

    def record(self, variant: str, where: str, source: str) -> dict[str, Any]:
        """What the point fits, on what: compared with a finished run's postprocess.json before reusing it."""
        return {
            "method": self.method,
            "model": source,
            "fit_files": list(self.files_for(variant, where)),
            **dict(self.options),
        }


def _files(value: Any, where: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(f, str) and f for f in items):
        raise ConfigError(
            f"{where}: postprocess.fit_file must be a file name or a list of them, got {value!r}"
        )
    return tuple(items)


def parse_postprocess(value: Any, where: str) -> PostprocessPoint:
    """A point's ``postprocess`` mapping, checked (an error names the grid file and the point)."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: postprocess must be a mapping with keys {', '.join(SPEC_KEYS)}")
    unknown = sorted(set(value) - set(SPEC_KEYS))
    if unknown:
        raise ConfigError(
            f"{where}: postprocess has unknown key(s) {', '.join(unknown)}; valid: {', '.join(SPEC_KEYS)}"
        )
    evaluate_only = value.get("method") == EVALUATE_ONLY
    for key in ("method", "model") + (() if evaluate_only else ("fit_file",)):
        if key not in value:
            raise ConfigError(f"{where}: postprocess needs {key!r}")
    if value["method"] not in (*METHODS, EVALUATE_ONLY):
        raise ConfigError(
            f"{where}: postprocess.method must be one of {', '.join((*METHODS, EVALUATE_ONLY))}, got "
            f"{value['method']!r}"
        )
    if value["method"] == "pca" and "dim" not in value:
        raise ConfigError(f"{where}: postprocess.dim is required for pca (the output dimension)")
    if evaluate_only and set(value) - {"method", "model"}:
        raise ConfigError(
            f"{where}: postprocess method {EVALUATE_ONLY!r} takes only 'model' (it fits nothing)"
        )
    fit = value.get("fit_file", [])
    files = (
        ()
        if evaluate_only
        else {str(v): _files(f, where) for v, f in fit.items()}
        if isinstance(fit, dict)
        else _files(fit, where)
    )
    options = tuple((k, value[k]) for k in OPTION_KEYS if k in value)
    point = PostprocessPoint(str(value["method"]), str(value["model"]), files, options)
    try:
        point.settings(0)
    except TypeError as err:
        raise ConfigError(f"{where}: postprocess options: {err}") from None
    return point


# (model, its student layers, pooler, fit files, max_sentences) -> its raw vectors: the points of a grid that post-process the same
# model (whitening and flow of one seed's model; the start model for every seed) encode the fit file once
_VECTORS: dict[tuple[Any, ...], Any] = {}
_VECTORS_KEPT = 4


def run_postprocess_point(
    point: PostprocessPoint, cfg: TrainConfig, variant: str, where: str, source_dir: Path | None
) -> None:
    """Fit, evaluate and write results.json into ``cfg.training.output_dir`` (see the module doc)."""
    import torch

    from sentcl.evaluation.runner import evaluate
    from sentcl.files.atomic import atomic_write_json
    from sentcl.files.paths import resolve_data_dir
    from sentcl.modeling.encode_adapter import encode_fn
    from sentcl.postprocess.fit import postprocess_model, raw_vectors, read_fit_sentences

    out = Path(cfg.training.output_dir)
    data_dir = resolve_data_dir(cfg.data.data_dir)
    files = [data_dir / f for f in point.files_for(variant, where)]
    source, encoder = _source_model(cfg, source_dir)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    encoder = encoder.to(device)
    if point.method != EVALUATE_ONLY:
        settings = point.settings(cfg.training.seed)
        key = (
            source,
            None if source_dir is not None else tuple(cfg.model.student_layers or ()),
            encoder.pooler,
            encoder.train_max_length,
            tuple(map(str, files)),
            settings.max_sentences,
        )
        if key not in _VECTORS:
            sentences = read_fit_sentences(files, settings.max_sentences)
            _VECTORS[key] = raw_vectors(encoder, sentences, cfg.eval.batch_size)
            while len(_VECTORS) > _VECTORS_KEPT:
                _VECTORS.pop(next(iter(_VECTORS)))
        encoder = postprocess_model(encoder, settings, files, cfg.eval.batch_size, _VECTORS[key])
    logger.info("evaluating %s + %s on %s", source, point.method, ", ".join(cfg.eval.final_tasks))
    results = evaluate(
        encode_fn(encoder, cfg.eval.batch_size), data_dir, cfg.eval.final_tasks, cfg.eval.transfer_protocol
    )
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "config.json", to_dict(cfg))
    record = point.record(variant, where, source)
    atomic_write_json(out / "postprocess.json", record)
    summary = {"best_step": None, "postprocess": encoder.postprocess, "model": source, "results": results}
    atomic_write_json(out / "results.json", summary)  # last: marks the point done


def _source_model(cfg: TrainConfig, source_dir: Path | None) -> tuple[str, Any]:
    """(its name, the SentenceEncoder) of a post-processing point's model: the start model with the point's
    settings, or an earlier point's best model."""
    from sentcl.modeling.encoder import SentenceEncoder

    if source_dir is not None:
        source = str(source_dir / "best")
        return source, SentenceEncoder.from_pretrained(source)
    from sentcl.modeling.build import start_encoder

    return cfg.model.name_or_path, start_encoder(cfg.model, for_training=False)


def postprocess_differences(out: Path, record: dict[str, Any]) -> list[str]:
    """Keys of a finished point's postprocess.json that differ from ``record``."""
    file = out / "postprocess.json"
    saved = json.loads(file.read_text(encoding="utf-8")) if file.is_file() else {}
    return [
        f"postprocess.{k}: {saved.get(k)!r} in the run, {record.get(k)!r} now"
        for k in sorted(set(saved) | set(record))
        if saved.get(k) != record.get(k)
    ]
