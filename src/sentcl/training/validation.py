"""One validation pass over a whole config, before any work: every rule that spans sections or reads a file.

Rules inside one section live in the section's ``__post_init__`` (a bad value fails while parsing); this pass
holds the rest, so that ``train()`` fails in its first line and never after it created a run folder, read the
corpus or took a step. A method's own cross-section rules live with its options (``ObjectiveConfig.check``).

The pure part (``environment=False``) imports no torch: names are checked against ``sentcl.config.names`` and
the method records. The environment part resolves the data folder, the training file and the device, and
``validate`` returns them (``Resolved``), so the run uses what was checked instead of resolving again.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sentcl.config.names as config_names
from sentcl.config import (
    ConfigError,
    TrainConfig,
    check_choice,
    method_scoped_keys,
    objective_option_classes,
)
from sentcl.config.method_catalogue import method_record
from sentcl.files.read import describe_not_a_file, preview

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Resolved:
    """What ``validate`` resolved on this machine: the data folder, the training file and the device (None
    for each with ``environment=False``)."""

    data_dir: Path | None = None
    train_path: Path | None = None
    device: torch.device | None = None


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
            f"{key}={preview(_value(cfg, key))} is ignored by {cfg.objective.name}; it is used by "
            f"{', '.join(users) or 'no method'} (objective.name)"
        )


#: The cosine gap at which logits must not saturate: two candidates whose cosines to an anchor differ by 2^-10
#: (about 0.001, closer than the in-batch negatives of an untrained encoder usually are) must still get distinct
#: softmax shares in float32. Our reading of "logits that saturate"; no paper states a bound. SimCSE's
#: temperatures (0.001 to 1, its Table D.1) all pass.
SATURATION_GAP = 2.0**-10
#: float32 rounds 1 + x to 1 for every x <= 2^-24 (half its spacing at 1, ties to even)
FLOAT32_HALF_SPACING_AT_ONE = 2.0**-24


def logits_saturate(scale: float, gap: float = SATURATION_GAP) -> bool:
    """True when logits ``cosine x scale`` (scale = 1 / temperature) saturate in float32: the cross-entropy of a
    positive and a candidate ``gap`` below it is exactly 0, because the candidate's share exp(-gap x scale) is
    lost next to the positive's 1 (at most 2^-24), i.e. ``gap x scale >= 24 ln 2``."""
    return not math.isfinite(scale) or gap * scale >= -math.log(FLOAT32_HALF_SPACING_AT_ONE)


def check_needs(cfg: TrainConfig, world_size: int = 1) -> None:
    """What the objective declares it needs to learn at all (``ObjectiveConfig.min_batch``, ``temperature_keys``,
    ``scale_keys``): refused before any work, naming the key. (``model.max_length`` >= 3, room for a real token,
    is the model section's own rule.)"""
    o = cfg.objective
    least, why = o.min_batch()
    if cfg.training.batch_size * world_size < least:
        across = f" x {world_size} processes" if world_size > 1 else ""
        raise ConfigError(
            f"training.batch_size={cfg.training.batch_size}{across} cannot train {o.name}: it needs {least} or "
            f"more sentences per batch ({why})"
        )
    cap = cfg.data.max_examples
    if cap is not None and cap < cfg.training.batch_size * world_size:
        across = f" x {world_size} processes" if world_size > 1 else ""
        raise ConfigError(
            f"data.max_examples={cap} leaves fewer examples than one batch (training.batch_size="
            f"{cfg.training.batch_size}{across}); use {cfg.training.batch_size * world_size} or more, or null for all"
        )
    limit = (
        -math.log(FLOAT32_HALF_SPACING_AT_ONE) / SATURATION_GAP
    )  # the largest scale that does not saturate
    for key, scale in [(k, 1.0 / getattr(o, k)) for k in o.temperature_keys] + [
        (k, getattr(o, k)) for k in o.scale_keys
    ]:
        if logits_saturate(scale):
            value = getattr(o, key)
            bound = f"{1.0 / limit:.3g} or more" if key in o.temperature_keys else f"{limit:.4g} or less"
            raise ConfigError(
                f"objective.{key}={value!r} saturates float32 logits: two cosines {SATURATION_GAP:.2g} apart give "
                f"the top one the whole softmax, so the loss is exactly 0 and nothing is learned; use {bound}"
            )


def check_data(cfg: TrainConfig, reader: str) -> None:
    d = cfg.data
    if d.augmentation is not None:
        check_choice("data.augmentation", d.augmentation, config_names.TEXT_AUGMENTATIONS)
    if d.token_augmentation is not None:
        check_choice("data.token_augmentation", d.token_augmentation, config_names.TOKEN_AUGMENTATIONS)
    if reader not in config_names.READERS:
        raise ConfigError(
            f"data.reader={preview(reader)} is not a reader; valid: {', '.join(config_names.READERS)}"
        )
    if cfg.data.streaming and reader != "lines":
        raise ConfigError(
            f"data.streaming reads plain text files (reader 'lines'); {cfg.objective.name} uses reader {reader!r}"
        )
    nli_readers = (
        "nli_csv",
        *config_names.NEUTRAL_READERS,
    )  # the readers that give sup_simcse its neutral hypotheses
    if cfg.data.use_neutral and reader not in nli_readers:
        raise ConfigError(f"data.use_neutral needs an NLI reader ({', '.join(nli_readers)}), not {reader!r}")


def check_model(cfg: TrainConfig) -> None:
    m = cfg.model
    if m.pooler == "mask" and not type(cfg.objective).templated_views:
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


def check_files(cfg: TrainConfig) -> tuple[Path, Path]:
    """The data folder, the training file and a PREFIX:PATH dev task (read once); returns the data folder and
    the training file."""
    from sentcl.evaluation.labelfree.selection import unlabelled_dev
    from sentcl.evaluation.runner import check_dev_task
    from sentcl.files.paths import data_file, resolve_data_dir, user_file

    given = Path(cfg.data.train_file)
    picks_by_dev = bool(cfg.eval.dev_task) and ":" not in cfg.eval.dev_task and not cfg.eval.unlabelled_file
    evaluates = bool(cfg.eval.final_tasks) or picks_by_dev
    needs = ([] if given.is_absolute() or given.exists() else [given]) + (["senteval"] if evaluates else [])
    data_dir = resolve_data_dir(cfg.data.data_dir, needs)
    train_path = user_file(given, data_dir)  # the working folder first, then the data folder
    problem = describe_not_a_file(train_path)
    if problem == "does not exist":
        if given.is_absolute():
            raise FileNotFoundError(f"data.train_file {given} does not exist")
        data_file(data_dir, cfg.data.train_file)  # the error that says how to get the data
    if problem is not None and not train_path.is_dir():  # a folder: a reader of split folders (senteval_snli)
        raise ConfigError(f"data.train_file {train_path} {problem}")
    check_dev_task(cfg.eval.dev_task, data_dir)  # pairs:FILE / retrieval:DIR: read once, errors name the file
    unlabelled_dev(cfg.eval, data_dir)  # eval.unlabelled_file: read and checked once, before training
    return data_dir, train_path


def check_eval(cfg: TrainConfig) -> None:
    unknown = config_names.unknown_tasks(cfg.eval.final_tasks)
    if unknown:
        valid = [*config_names.EVAL_TASKS, *config_names.EVAL_GROUPS]
        raise ConfigError(
            f"eval.final_tasks: unknown evaluation task(s) {', '.join(map(preview, unknown))}; valid: "
            f"{', '.join(valid)}"
        )


def check_training(cfg: TrainConfig) -> torch.device:
    """The device and its precision, the tracker; returns the device."""
    from sentcl.training.precision import check_precision, resolve_device
    from sentcl.training.tracking import check_report_to

    device = resolve_device(cfg.training.device)
    try:
        check_precision(cfg.training.precision, device)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    check_report_to(cfg.training.report_to)
    return device


def _launched_world_size() -> int:
    """The processes of this run (torchrun's WORLD_SIZE): in-batch negatives are gathered across them."""
    from sentcl.distributed import launched_world_size

    return launched_world_size()


def validate(cfg: TrainConfig, *, environment: bool = True) -> Resolved:
    """Raise ConfigError (or FileNotFoundError for a missing file) for the first rule ``cfg`` breaks; return
    what the environment part resolved.

    ``environment=False`` leaves out the rules that depend on this machine: the device and its precision, an
    installed tracker, the data files (a GPU recipe checked on a laptop); that part imports no torch."""
    try:
        record = method_record(cfg.objective.name)
    except KeyError as err:
        raise ConfigError(f"objective.name: {err.args[0]}") from None
    if not isinstance(cfg.objective, record.options):
        raise ConfigError(
            f"objective is a {type(cfg.objective).__name__}; {cfg.objective.name} takes {record.options.__name__}"
        )
    for section in dataclasses.fields(cfg):  # values set after parsing get their section's checks again
        getattr(cfg, section.name).__post_init__()
    check_method_scoped_keys(cfg)
    check_needs(cfg, _launched_world_size() if environment else 1)
    check_data(cfg, cfg.data.reader or record.reader)
    check_model(cfg)
    cfg.objective.check(cfg)
    check_eval(cfg)
    if not environment:
        return Resolved()
    device = check_training(cfg)
    data_dir, train_path = check_files(cfg)
    return Resolved(data_dir, train_path, device)
