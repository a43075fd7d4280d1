"""Readers of index artefacts (.npy arrays; JSON objects by ``sentcl.files.read_json``) that name a missing,
damaged or truncated file.

They are written with ``sentcl.atomic`` (temporary file, fsync, rename), so a reader sees either the old
file or the complete new one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


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
