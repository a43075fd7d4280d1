"""The one reader of user arrays (.npy): what an array slot accepts, checked the same way for every slot
(``index build --queries``, ``search`` over stored vectors, shards read back, a teacher's cache).

``npy_problem`` says by its first bytes what a file named .npy really is: a .npz (zip) archive, a Python pickle
(never loaded: unpickling runs code), text, or nothing at all. ``read_vectors`` then asks for vectors: a real
dtype (not complex, object, text or a record), two dimensions, the expected width, finite values, and, where
directions are needed, rows that are not all zero, normalised without overflow (each row is scaled by its
largest magnitude first, so 1e30-sized rows keep their direction instead of becoming 0).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from sentcl.similarity import unit_rows

NPY_MAGIC = b"\x93NUMPY"
_SNIFF_BYTES = 16


def npy_problem(path: Path) -> str | None:
    """Why the regular file ``path`` is not a .npy array, by its first bytes; None when it starts as one."""
    with open(path, "rb") as handle:
        head = handle.read(_SNIFF_BYTES)
    if head.startswith(NPY_MAGIC):
        return None
    if not head:
        return "is empty (0 bytes): not a .npy array"
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as archive:
                names = ", ".join(n.removesuffix(".npy") for n in archive.namelist()[:5])
        except (zipfile.BadZipFile, OSError):
            names = "unreadable"
        return f"is a .npz (zip) archive (arrays: {names}), not a .npy array: save one array with numpy.save"
    if head[:1] == b"\x80" and len(head) > 1 and head[1] <= 5:
        return "holds a Python pickle, not a .npy array: refused unread (loading a pickle can run code)"
    return f"is not a .npy array (it starts with {head[:8]!r})"


def _kind_problem(arr: np.ndarray) -> str | None:
    dtype = arr.dtype
    if dtype.names is not None:
        return f"holds records ({dtype}), not numbers"
    if dtype.kind == "c":
        return f"holds complex values ({dtype}); expected real vectors"
    if dtype.kind not in "biuf":
        return f"holds {dtype} values, not numbers"
    return None


def first_bad_row(arr: np.ndarray) -> tuple[int, str] | None:
    """(row, what is wrong) for the first row holding NaN or inf, or None. ``arr``: (N, D)."""
    finite = np.isfinite(arr).all(axis=1)  # (N,)
    if finite.all():
        return None
    row = int(np.argmin(finite))
    return row, "NaN" if np.isnan(arr[row]).any() else "inf"


def unit_rows_safe(arr: np.ndarray) -> np.ndarray:
    """Rows of ``arr`` (N, D) scaled to length 1 as float32 without overflow or underflow: each row is divided
    by its largest magnitude first (in float64), then by its norm. Zero rows stay zero."""
    x = np.asarray(arr, dtype=np.float64)
    peak = np.abs(x).max(axis=1, keepdims=True)  # (N, 1)
    x = np.divide(x, peak, out=np.zeros_like(x), where=peak > 0)  # every row's largest magnitude now 1
    return unit_rows(x).astype(np.float32)


def check_vectors(
    arr: np.ndarray, what: str, width: int | None = None, directions: bool = False
) -> np.ndarray:
    """``arr`` as float32 (N, D) vectors, or ValueError naming ``what``: a real dtype, 2-D, at least one row,
    ``width`` columns, finite; with ``directions``, no all-zero row, and the rows returned unit length."""
    problem = _kind_problem(arr)
    if problem is not None:
        raise ValueError(f"{what} {problem}")
    shape = f"({{N}}, {width})" if width else "(N, D)"
    if arr.ndim != 2 or len(arr) == 0 or arr.shape[1] == 0 or (width and arr.shape[1] != width):
        raise ValueError(f"{what}: expected a {shape.format(N='N')} array of vectors, got shape {arr.shape}")
    bad = first_bad_row(arr)
    if bad is not None:
        raise ValueError(f"{what}: row {bad[0]} holds {bad[1]}; every vector must be finite")
    if not directions:
        big = np.abs(arr).max() if arr.dtype.kind == "f" else 0
        if big > np.finfo(np.float32).max:
            raise ValueError(f"{what}: values up to {big:.3g} overflow float32")
        return np.asarray(arr, dtype=np.float32)
    zero = ~np.any(arr != 0, axis=1)  # (N,)
    if zero.any():
        raise ValueError(f"{what}: row {int(np.argmax(zero))} is all zeros: it has no direction to search by")
    return unit_rows_safe(arr)
