"""The run folder's checks before any work: what ``training.output_dir`` may be, and what ``--resume`` may change.

A new run needs a folder that can be written and that holds neither a model (its ``config.json`` would be
overwritten) nor another run (its checkpoints would be mixed with the new run's); ``--resume`` continues a
run only with the config it was trained with, except for the settings in ``SAFE_TO_CHANGE``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

from sentcl.config import ConfigError, TrainConfig, changed_settings
from sentcl.training.checkpoint import STATE_FILE, list_checkpoints, recover_run_folder

logger = logging.getLogger(__name__)

# a Hugging Face / sentence-transformers / sentcl model folder has one of these
MODEL_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "modules.json")
MODEL_FILES += ("sentcl.json", "tokenizer_config.json", "config.json")
# keys that --resume may change: how long to train, what to evaluate and report, where things are
SAFE_TO_CHANGE = (
    "training.max_steps",
    "training.epochs",
    "training.eval_steps",
    "training.save_steps",
    "training.log_steps",
    "training.progress",
    "training.report_to",
    "training.num_threads",
    "training.device",
    "training.length_buckets",
    "training.packed_tokens",
    "training.output_dir",
    "data.data_dir",
    "data.cache_dir",
    "eval.final_tasks",
    "eval.batch_size",
    "eval.track_alignment_uniformity",
    "eval.compare_with_start",
    "eval.transfer_protocol",
)


def _is_run_config(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "training" in data and "model" in data


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


def prepare_output_dir(out: Path, cfg: TrainConfig, resume: bool, train_path: Path) -> list[str]:
    """Check ``training.output_dir`` for a new run or a resume (rank 0, before any work), then make it usable:
    put back what an interrupted write left half-renamed, remove stale temporaries. Returns the config
    changes a resume allowed (``resume_changes``)."""
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
        run = _run_contents(out)
        if run:
            raise ConfigError(
                f"training.output_dir {out} holds another run ({', '.join(run)}); pass --resume to continue "
                "it, or choose a new folder"
            )
    if resume and not list_checkpoints(out):
        raise FileNotFoundError(f"--resume: no checkpoint-<step> folder with {STATE_FILE} in {out}")
    changes = resume_changes(out, cfg, train_path) if resume else []
    _check_writable(out)
    recover_run_folder(out)
    if not resume and (out / "metrics.jsonl").is_file():
        logger.warning(
            "%s: a run that stopped before its first checkpoint; its metrics.jsonl is replaced", out
        )
        (out / "metrics.jsonl").unlink()
    return changes


def file_fingerprint(path: Path) -> str:
    """sha256 of a file's size, first and last MiB: tells a moved training file from another one, cheaply."""
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with open(path, "rb") as handle:
        digest.update(handle.read(1 << 20))
        handle.seek(max(0, size - (1 << 20)))
        digest.update(handle.read(1 << 20))
    return digest.hexdigest()[:16]


def _recorded_fingerprint(out: Path) -> str | None:
    """The training file's fingerprint that the run recorded (metrics.jsonl's last ``data`` event)."""
    recorded = None
    metrics = out / "metrics.jsonl"
    if metrics.is_file():
        for line in metrics.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("event") == "data" and record.get("fingerprint"):
                recorded = record["fingerprint"]
    return recorded


def resume_changes(out: Path, cfg: TrainConfig, train_path: Path) -> list[str]:
    """Compare ``cfg`` with the run's saved ``config.json``: refuse changes that break the resume (listed in a
    ConfigError), return the safe ones (for the log). A key the saved config lacks counts as its default. The
    training file is judged by the fingerprint the run recorded: moved is fine, other contents are not."""
    saved_file = Path(out) / "config.json"
    if not saved_file.is_file():
        logger.warning("%s is missing: the resumed config cannot be compared with the run's", saved_file)
        return []
    try:
        saved_data = json.loads(saved_file.read_text(encoding="utf-8"))
    except ValueError as err:
        raise ConfigError(
            f"{saved_file} is not valid JSON ({err}); cannot check the resumed config"
        ) from None
    differences = changed_settings(saved_data, cfg)
    changed = list(differences)
    described = {k: f"{k}: {old!r} -> {new!r}" for k, (old, new) in differences.items()}
    safe: tuple[str, ...] = SAFE_TO_CHANGE
    recorded = _recorded_fingerprint(Path(out))
    if recorded is not None and train_path.is_file():  # judge the training file by its contents
        if file_fingerprint(train_path) == recorded:
            safe = (*SAFE_TO_CHANGE, "data.train_file")
            if "data.train_file" in described:
                described["data.train_file"] += " (same contents)"
        else:
            described["data.train_file"] = f"data.train_file: {train_path} has other contents than the run's"
            changed = [*dict.fromkeys([*changed, "data.train_file"])]
    unsafe = [described[k] for k in changed if k not in safe]
    if unsafe:
        raise ConfigError(
            f"--resume: the config differs from the run's ({saved_file}) in ways that break the resume: "
            f"{'; '.join(unsafe)} (only these may change: {', '.join(SAFE_TO_CHANGE)})"
        )
    return [described[k] for k in changed if k != "training.output_dir"]
