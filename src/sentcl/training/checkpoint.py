"""Atomic checkpoints: write into a temporary folder beside the target, then swap it into place.

A run folder holds ``checkpoint-<step>/`` (model as a plain HF folder under ``model/`` plus
``training_state.pt``: optimizer, schedule, RNG states, counters) and ``best/`` (the best model by the dev
score). Every file is fsynced before the rename, so a crash or a kill mid-write leaves only a ``.tmp-*``
folder, never a half-written checkpoint (``sentcl.files.atomic.atomic_dir_write``, the project's one atomic folder
writer; ``write_checkpoint_dir`` words its errors for a run). Replacing an existing folder (``best/``) swaps
the two folders atomically where the OS can (Linux ``renameat2(RENAME_EXCHANGE)``); elsewhere it takes two
renames, and a kill between them leaves ``.old-best-*``, which ``recover_run_folder`` puts back on the next
start.

``training_state.pt`` (RNG states: ``sentcl.rng``) holds tensors and plain Python values only, so it is read with
``torch.load(weights_only=True)``: a crafted file cannot run code on ``--resume``.
"""

from __future__ import annotations

import logging
import os
import pickle
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from sentcl.files.atomic import STALE_RE, AtomicWriteError, atomic_dir_write

logger = logging.getLogger(__name__)
CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")
STATE_FILE = "training_state.pt"


class CheckpointError(RuntimeError):
    """A checkpoint could not be written, or a saved training state cannot be trusted."""


def write_checkpoint_dir(target: Path, write: Callable[[Path], None]) -> None:
    """``sentcl.files.atomic.atomic_dir_write`` in the checkpoint's words: a failed write raises ``CheckpointError``
    naming the target and the OS's reason, and says that the previous checkpoints are kept."""
    try:
        atomic_dir_write(target, write)
    except AtomicWriteError as err:
        raise CheckpointError(
            f"could not write {err.target}: {err.reason} (the previous checkpoints are kept)"
        ) from err


def recover_run_folder(run_dir: Path) -> None:
    """Put back a folder that a kill left as ``.old-<name>-*`` between two renames; remove stale temporaries.

    ``.tmp-*`` folders and files are writes that never finished (or never got swapped in), ``.old-*`` folders
    whose name exists again are replaced copies: both are deleted.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return
    stale = sorted(p for p in run_dir.iterdir() if STALE_RE.match(p.name))
    for path in stale:
        kind, name = STALE_RE.match(path.name).groups()  # type: ignore[union-attr]
        if kind == "old" and not (run_dir / name).exists():
            path.rename(run_dir / name)
            logger.warning(
                "restored %s from %s (a write was interrupted between two renames)", name, path.name
            )
    for path in stale:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists():
            path.unlink()
        else:
            continue
        logger.info("removed the stale temporary %s", path)


# --------------------------------------------------------------------------- training state


def save_state(payload: dict[str, Any], path: Path) -> None:
    """``torch.save`` through a Python file (so a full disk is an OSError), flushed to disk."""
    with open(path, "wb") as handle:
        torch.save(payload, handle)
        handle.flush()
        os.fsync(handle.fileno())


def load_state(path: Path) -> dict[str, Any]:
    """Read a training state with ``weights_only=True``: tensors and plain values only, never code.

    Raises ``CheckpointError`` for a file that holds other Python objects (crafted, or written by an older
    sentcl, which pickled numpy RNG states), and ``EOFError``/``RuntimeError``/``OSError`` for a
    truncated or corrupt file.
    """
    try:
        return torch.load(path, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as err:
        if "weights only" not in str(err).lower():
            raise
        first = str(err).splitlines()[-1].strip() if str(err).strip() else ""
        raise CheckpointError(
            f"refusing to load {path}: it holds Python objects other than tensors and plain values, which "
            f"could run code ({first[:160]}); it was not written by this version of sentcl"
        ) from None


def list_checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    found = []
    if Path(run_dir).is_dir():
        for child in Path(run_dir).iterdir():
            match = CHECKPOINT_RE.match(child.name)
            if match and (child / STATE_FILE).is_file():
                found.append((int(match.group(1)), child))
    return sorted(found)


def latest_checkpoint(run_dir: Path) -> Path | None:
    found = list_checkpoints(run_dir)
    return found[-1][1] if found else None


def load_latest_state(run_dir: Path) -> tuple[Path, dict[str, Any]] | None:
    """The newest checkpoint whose training state reads; a truncated or corrupt newer one is skipped with a
    warning. None when the run folder has no checkpoint at all."""
    found = list_checkpoints(run_dir)
    for _, path in reversed(found):
        try:
            return path, load_state(path / STATE_FILE)
        except (EOFError, RuntimeError, OSError, pickle.UnpicklingError) as err:
            if isinstance(err, CheckpointError):
                raise
            logger.warning(
                "%s is truncated or corrupt (%s: %s); falling back to the previous checkpoint",
                path / STATE_FILE,
                type(err).__name__,
                str(err).splitlines()[0][:120] if str(err) else "",
            )
    if found:
        raise CheckpointError(f"no checkpoint in {run_dir} has a readable {STATE_FILE}")
    return None


def prune_checkpoints(run_dir: Path, keep: int) -> None:
    for _, path in list_checkpoints(run_dir)[:-keep]:
        shutil.rmtree(path)
