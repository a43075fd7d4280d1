"""Atomic checkpoints: write into a temporary folder beside the target, then rename it into place.

A run folder holds ``checkpoint-<step>/`` (model as a plain HF folder under ``model/`` plus
``training_state.pt``: optimizer, schedule, RNG states, counters) and ``best/`` (the best model by the dev
score). A crash mid-write leaves only a ``.tmp-*`` folder, never a half-written checkpoint.
"""

from __future__ import annotations

import random
import re
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")
STATE_FILE = "training_state.pt"


def atomic_dir_write(target: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a fresh folder, then replace ``target`` by it with renames."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".tmp-{target.name}-{uuid.uuid4().hex[:8]}"
    write(tmp)
    old = None
    if target.exists():
        old = target.parent / f".old-{target.name}-{uuid.uuid4().hex[:8]}"
        target.rename(old)
    tmp.rename(target)
    if old is not None:
        shutil.rmtree(old)


def rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


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


def prune_checkpoints(run_dir: Path, keep: int) -> None:
    for _, path in list_checkpoints(run_dir)[:-keep]:
        shutil.rmtree(path)
