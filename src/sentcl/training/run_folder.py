"""The run folder's checks before any work: what ``training.output_dir`` may be, and what ``--resume`` may change.

A new run needs a folder that can be written and that holds neither a model (its ``config.json`` would be
overwritten) nor another run (its checkpoints would be mixed with the new run's); ``--resume`` continues a
run only with the config it was trained with, except for the fields marked ``resume_safe``
(``sentcl.config.resume_safe_keys``). The run holds a lock on its folder (``sentcl.files.lock`` on
``LOCK_FILE``) from these checks to its end, so a second ``sentcl train`` into the same folder is refused with
the holder's PID.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from sentcl import distributed
from sentcl.config import ConfigError, TrainConfig, changed_settings, resume_safe_keys
from sentcl.files.fingerprint import file_sha256
from sentcl.files.lock import LockHeld, ProcessLock
from sentcl.files.output import Input, OutputRefused, claim_folder, model_input, read_marker, write_marker
from sentcl.files.read import iter_jsonl, mend_jsonl_tail, read_json
from sentcl.training.checkpoint import STATE_FILE, list_checkpoints, recover_run_folder

logger = logging.getLogger(__name__)

# a Hugging Face / sentence-transformers / sentcl model folder has one of these
MODEL_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "modules.json")
MODEL_FILES += ("sentcl.json", "tokenizer_config.json", "config.json")
#: the run's lock file inside its folder (holds the PID of the process that trains into it)
LOCK_FILE = ".sentcl-train.lock"
METRICS_FILE = "metrics.jsonl"


class RunLock:
    """An exclusive lock on ``<out>/LOCK_FILE`` (``sentcl.files.lock``), held until ``release`` (or the process
    ends); a second run into the folder is refused with the holder's PID."""

    def __init__(self, out: Path) -> None:
        path = out / LOCK_FILE
        try:
            self.lock = ProcessLock(path, wait=False)
        except LockHeld as held:
            raise ConfigError(
                f"training.output_dir {out} is in use by another sentcl train (PID {held.holder}, lock {path}); "
                "wait for it to end, or choose another folder"
            ) from None
        except OSError as err:
            raise ConfigError(f"training.output_dir {out} cannot be written: {err.strerror or err}") from None

    def release(self) -> None:
        self.lock.release()


def _is_run_config(path: Path) -> bool:
    try:
        data = read_json(path)
    except (OSError, ValueError):
        return False
    return "training" in data and "model" in data


def _check_is_folder(out: Path) -> None:
    """``out`` and every existing parent must be folders."""
    for path in (out, *out.parents):
        if path.exists() or path.is_symlink():
            if not path.is_dir():
                where = "is a file" if path == out else f"is under {path}, which is a file"
                raise ConfigError(f"training.output_dir {out} {where}, not a folder")
            return


def _check_writable(out: Path) -> None:
    """Create ``out`` and a probe file in it, so a read-only or full filesystem fails before any work."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise ConfigError(
            f"training.output_dir {out} cannot be written: {err.strerror or err}"
            + (f" ({err.filename})" if err.filename and Path(err.filename) != out else "")
        ) from None


def _run_contents(out: Path) -> list[str]:
    found = [p.name for _, p in list_checkpoints(out)]
    found += [name for name in ("best", "results.json") if (out / name).exists()]
    return found


def _mend_metrics(out: Path) -> None:
    """Before a resume: a torn last line of metrics.jsonl (a kill mid-write) is dropped with a warning; a bad
    line before it is an error naming ``file:line``."""
    metrics = out / METRICS_FILE
    if not metrics.is_file():
        return
    dropped = mend_jsonl_tail(metrics)
    if dropped:
        logger.warning("--resume: %s", dropped)
    for _ in iter_jsonl(metrics, error=ConfigError):
        pass


def prepare_output_dir(
    out: Path, cfg: TrainConfig, resume: bool, train_path: Path
) -> tuple[list[str], RunLock]:
    """Check ``training.output_dir`` for a new run or a resume (rank 0, before any work), lock it, then make it
    usable: put back what an interrupted write left half-renamed, remove stale temporaries, mend a torn
    metrics line. Returns the config changes a resume allowed (``resume_changes``) and the folder's lock, which
    the caller releases when the run ends."""
    out = Path(out)
    _check_is_folder(out)
    if out.is_dir() and not resume:
        model_files = [n for n in MODEL_FILES if (out / n).is_file()]
        if (out / "config.json").is_file() and _is_run_config(out / "config.json"):
            model_files.remove("config.json")
        if model_files:
            raise ConfigError(
                f"training.output_dir {out} holds a model ({', '.join(model_files)}), which the run would "
                "overwrite; choose a new folder"
            )
    no_checkpoint = f"--resume: no checkpoint-<step> folder with {STATE_FILE} in {out}"
    if resume and not out.is_dir():
        raise FileNotFoundError(no_checkpoint)
    inputs = [
        Input(train_path, "data.train_file"),
        *model_input(cfg.model.name_or_path, "model.name_or_path"),
    ]
    # a new, empty or run folder (sentcl.files.output): never the user's files, never an input; a resume
    # needs the run's checkpoints, and is refused below, naming them, when they are not there
    try:
        if not resume:
            claim_folder(out, "run", "training.output_dir", inputs)
    except OutputRefused as err:
        raise ConfigError(str(err)) from None
    _check_writable(out)
    lock = RunLock(out)  # before the checks that a concurrent run would change: one writer at a time
    try:
        run = _run_contents(out)
        if run and not resume:
            raise ConfigError(
                f"training.output_dir {out} holds another run ({', '.join(run)}); pass --resume to continue "
                "it, or choose a new folder"
            )
        if resume and not list_checkpoints(out):
            raise FileNotFoundError(no_checkpoint)
        if resume:
            _mend_metrics(out)
        changes = resume_changes(out, cfg, train_path) if resume else []
        recover_run_folder(out)
        if read_marker(out) is None:
            write_marker(out, "run")
        if not resume and (out / METRICS_FILE).is_file():
            logger.warning(
                "%s: a run that stopped before its first checkpoint; its metrics.jsonl is replaced", out
            )
            (out / METRICS_FILE).unlink()
    except BaseException:
        lock.release()
        raise
    return changes, lock


def _recorded_data(out: Path) -> dict:
    """The run's last ``data`` event of metrics.jsonl: the training file's SHA-256 and the world size."""
    recorded: dict = {}
    metrics = out / METRICS_FILE
    if metrics.is_file():
        for _, record in iter_jsonl(metrics, error=ConfigError):
            if record.get("event") == "data":
                recorded = record
    return recorded


def _world_change(recorded: dict, batch_size: int) -> str | None:
    """A change of processes (so of the global batch: the in-batch negatives) since the run began, else None.
    A run recorded before the world size was is not judged."""
    was, now = recorded.get("world_size"), distributed.world_size()
    if not isinstance(was, int) or was == now:
        return None
    return (
        f"processes: the run was trained with {was} (global batch {was * batch_size}), this resume has "
        f"{now} (global batch {now * batch_size}), which changes the in-batch negatives; resume with "
        f"torchrun --nproc-per-node {was}"
    )


def _check_sections(saved: dict[str, Any], saved_file: Path) -> None:
    """The run's config.json holds the config's sections, each an object: a section of another name or kind is
    a damaged file (never a diff of settings the user did not change)."""
    sections = [f.name for f in dataclasses.fields(TrainConfig)]
    for name, value in saved.items():
        problem = (
            f"unknown section {name!r} (the sections: {', '.join(sections)})"
            if name not in sections
            else None
            if isinstance(value, dict)
            else f"section {name!r} must be an object, got {type(value).__name__}"
        )
        if problem:
            raise ConfigError(
                f"--resume: {saved_file}: {problem}; the run's saved config was changed since it was written: "
                "restore it, or start a new run"
            )


def resume_changes(out: Path, cfg: TrainConfig, train_path: Path) -> list[str]:
    """Compare ``cfg`` with the run's saved ``config.json``: refuse changes that break the resume (listed in a
    ConfigError), return the safe ones (for the log). A key the saved config lacks counts as its default. The
    training file is judged by the SHA-256 the run recorded: moved is fine, other contents are not. The number
    of processes must be the run's (it sets the global batch)."""
    saved_file = Path(out) / "config.json"
    if not saved_file.is_file():
        logger.warning("%s is missing: the resumed config cannot be compared with the run's", saved_file)
        return []
    saved_data = read_json(saved_file, what="the run's config", error=ConfigError)
    _check_sections(saved_data, saved_file)
    differences = changed_settings(saved_data, cfg)
    changed = list(differences)
    described = {k: f"{k}: {old!r} -> {new!r}" for k, (old, new) in differences.items()}
    safe = tuple(resume_safe_keys())
    data = _recorded_data(Path(out))
    recorded = data.get("sha256")  # a run of an older sentcl recorded a sampled hash: not judged by contents
    if isinstance(recorded, str) and train_path.is_file():  # judge the training file by its contents
        if file_sha256(train_path) == recorded:
            safe = (*safe, "data.train_file")
            if "data.train_file" in described:
                described["data.train_file"] += " (same contents)"
        else:
            described["data.train_file"] = f"data.train_file: {train_path} has other contents than the run's"
            changed = [*dict.fromkeys([*changed, "data.train_file"])]
    unsafe = [described[k] for k in changed if k not in safe]
    world = _world_change(data, cfg.training.batch_size)
    unsafe += [world] if world else []
    if unsafe:
        raise ConfigError(
            f"--resume: the config differs from the run's ({saved_file}) in ways that break the resume: "
            f"{'; '.join(unsafe)} (only these may change: {', '.join(resume_safe_keys())})"
        )
    return [described[k] for k in changed if k != "training.output_dir"]
