"""One validation pass over a whole config, before any work: every rule that spans sections or reads a file.

Rules inside one section live in the section's ``__post_init__`` (a bad value fails while parsing); this pass
holds the rest, so that ``train()`` fails in its first line and never after it created a run folder, read the
corpus or took a step. A method's own cross-section rules live with its options (``ObjectiveConfig.check``).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from sentcl.config import (
    ConfigError,
    TrainConfig,
    check_choice,
    method_scoped_keys,
    objective_option_classes,
)


def _value(cfg: TrainConfig, dotted: str) -> Any:
    section, key = dotted.split(".")
    return getattr(getattr(cfg, section), key)


def _default(cfg: TrainConfig, dotted: str) -> Any:
    section, key = dotted.split(".")
    return getattr(type(getattr(cfg, section))(), key)


def check_method_scoped_keys(cfg: TrainConfig) -> None:
    """A non-default value of a key that only some methods read, under a method that ignores it."""
    uses = type(cfg.objective).uses
    for key in method_scoped_keys():
        if key in uses or _value(cfg, key) == _default(cfg, key):
            continue
        users = [m for m, options in objective_option_classes().items() if key in options.uses]
        raise ConfigError(
            f"{key}={_value(cfg, key)!r} is ignored by {cfg.objective.name}; it is used by "
            f"{', '.join(users) or 'no method'} (objective.name)"
        )


def check_data(cfg: TrainConfig, reader: str) -> None:
    from sentcl.data.augment import TEXT_AUGMENTATIONS
    from sentcl.data.sources import NEUTRAL_READERS, READERS
    from sentcl.methods.views import TOKEN_AUGMENTATION_NAMES

    d = cfg.data
    if d.augmentation is not None:
        check_choice("data.augmentation", d.augmentation, TEXT_AUGMENTATIONS.names())
    if d.token_augmentation is not None:
        check_choice("data.token_augmentation", d.token_augmentation, TOKEN_AUGMENTATION_NAMES)
    if reader not in READERS:
        raise ConfigError(f"data.reader={reader!r} is not a reader; valid: {', '.join(READERS.names())}")
    if cfg.data.streaming and reader != "lines":
        raise ConfigError(
            f"data.streaming reads plain text files (reader 'lines'); {cfg.objective.name} uses reader {reader!r}"
        )
    nli_readers = ("nli_csv", *NEUTRAL_READERS)  # the readers that give sup_simcse its neutral hypotheses
    if cfg.data.use_neutral and reader not in nli_readers:
        raise ConfigError(f"data.use_neutral needs an NLI reader ({', '.join(nli_readers)}), not {reader!r}")


def check_model(cfg: TrainConfig) -> None:
    m = cfg.model
    if m.pooler == "mask" and not getattr(type(cfg.objective), "templated_views", False):
        raise ConfigError(
            "model.pooler=mask reads the [MASK] token of a prompt template: only methods whose views are "
            f"templates use it (promptbert, sncse), not {cfg.objective.name}"
        )
    if m.dual_embedding != "f" and not m.two_encoders:
        raise ConfigError(f"model.dual_embedding={m.dual_embedding!r} needs model.two_encoders=true")
    if m.two_encoders and m.same_dropout_mask:
        raise ConfigError(
            "model.two_encoders encodes views with two encoders: it excludes model.same_dropout_mask"
        )
    if m.two_encoders and cfg.data.token_augmentation == "feature_cutoff":
        raise ConfigError(
            "model.two_encoders does not support feature augmentations (data.token_augmentation=feature_cutoff)"
        )


def check_files(cfg: TrainConfig) -> None:
    """The data folder, the training file and a PREFIX:PATH dev task (read once)."""
    from sentcl.evaluation.runner import check_dev_task
    from sentcl.paths import data_file, resolve_data_dir

    data_dir = resolve_data_dir(cfg.data.data_dir)
    if not Path(cfg.data.train_file).is_absolute():
        data_file(data_dir, cfg.data.train_file)
    elif not os.path.lexists(cfg.data.train_file):  # a FIFO or a link loop exists: the reader says what
        raise FileNotFoundError(f"data.train_file {cfg.data.train_file} does not exist")
    check_dev_task(cfg.eval.dev_task, data_dir)  # pairs:FILE / retrieval:DIR: read once, errors name the file


def check_eval(cfg: TrainConfig) -> None:
    from sentcl.evaluation.runner import check_tasks

    try:
        check_tasks(cfg.eval.final_tasks)
    except ValueError as err:
        raise ConfigError(f"eval.final_tasks: {err}") from None


def check_training(cfg: TrainConfig) -> None:
    from sentcl.training.precision import check_precision, resolve_device
    from sentcl.training.tracking import check_report_to

    try:
        check_precision(cfg.training.precision, resolve_device(cfg.training.device))
    except ValueError as err:
        raise ConfigError(str(err)) from None
    check_report_to(cfg.training.report_to)


def validate(cfg: TrainConfig, *, environment: bool = True) -> None:
    """Raise ConfigError (or FileNotFoundError for a missing file) for the first rule ``cfg`` breaks.

    ``environment=False`` leaves out the rules that depend on this machine: the device and its precision, an
    installed tracker, the data files (a GPU recipe checked on a laptop)."""
    from sentcl.methods import method_spec

    spec = method_spec(cfg)
    if not isinstance(cfg.objective, spec.options):
        raise ConfigError(
            f"objective is a {type(cfg.objective).__name__}; {cfg.objective.name} takes {spec.options.__name__}"
        )
    for section in dataclasses.fields(cfg):  # values set after parsing get their section's checks again
        getattr(cfg, section.name).__post_init__()
    check_method_scoped_keys(cfg)
    check_data(cfg, cfg.data.reader or spec.reader)
    check_model(cfg)
    cfg.objective.check(cfg)
    check_eval(cfg)
    if environment:
        check_training(cfg)
        check_files(cfg)
