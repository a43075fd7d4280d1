"""Readers of index artefacts (JSON objects, .npy arrays) that name a missing, damaged or truncated file.

They are written with ``sentcl.atomic`` (temporary file, fsync, rename), so a reader sees either the old
file or the complete new one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    """A JSON object from ``path``; a missing, unreadable or non-object file is a ValueError naming it."""
    if not path.is_file():
        raise FileNotFoundError(f"{what} {path} does not exist")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: {what} is not valid JSON ({err})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: {what} must be a JSON object, got {type(value).__name__}")
    return value


def load_npy(path: Path, mmap: bool = True) -> np.ndarray:
    """An .npy file (memory-mapped by default); a missing, empty, truncated or corrupt file names itself."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    if path.stat().st_size == 0:
        raise ValueError(f"{path} is empty (0 bytes): not a .npy array; re-create it")
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise ValueError(f"{path} is truncated or not a valid .npy array ({err}); re-create it") from None
