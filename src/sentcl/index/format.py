"""The one on-disk format family of sentcl's index folders, and the one reader of their header.

Every index folder sentcl writes holds ``index.json``, whose first keys are the family's:

    {"format": "sentcl-index", "sentcl_version": ..., "type": T, "dim": D, "count": N, ...}

``type`` names the kind and what else the folder holds:

* ``exact``: the embeddings themselves (``embeddings.npy``, (N, D) float32, normalised when ``normalize``) and
  ``texts.jsonl`` (one JSON string a line); ``sentcl search --index`` keeps its corpus cache so
  (``sentcl.index.exact``), with ``fingerprint.json`` beside it;
* ``flat``, ``ivf``, ``hnsw``, ``ivfpq``, ``binary``, ``int8``: a faiss index over sharded embeddings
  (``index.faiss``, and ``rows.npy`` when tuning held rows out), the shards' folder, the parameters and the
  tuning record (``sentcl index build``: ``sentcl.index.faiss_build``).

Folders written before the family still open: ``faiss.json`` (``"format": "sentcl-faiss-index"``, a
``sentcl index build`` folder) and an ``index.json`` without ``format`` (``{"normalize", "backend", "size",
"dim"}``, a ``sentcl search --index`` cache) are read into the same form, with ``legacy`` naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sentcl.files.fields import Int, Record, Text, check
from sentcl.files.read import read_json
from sentcl.index.faiss_params import TYPES
from sentcl.version import __version__

META_FILE = "index.json"
FORMAT = "sentcl-index"
EXACT = "exact"
LEGACY_ANN_FILE = "faiss.json"
LEGACY_ANN_FORMAT = "sentcl-faiss-index"
#: the family's header, checked for every folder (a type's own fields are its reader's to check)
HEADER = Record({"format": Text((FORMAT,)), "type": Text((*TYPES, EXACT)), "dim": Int(1), "count": Int(0)})


def header(kind: str, dim: int, count: int) -> dict[str, Any]:
    """The family's first keys of ``index.json`` for an index of ``kind``."""
    return {"format": FORMAT, "sentcl_version": __version__, "type": kind, "dim": dim, "count": count}


def meta_path(folder: Path) -> Path | None:
    """The folder's header file: ``index.json``, else an older build's ``faiss.json``; None when neither."""
    for name in (META_FILE, LEGACY_ANN_FILE):
        if (folder / name).is_file():
            return folder / name
    return None


def read_meta(folder: str | Path) -> tuple[Path, dict[str, Any]]:
    """(the header file, its content in the family's form) of an index folder, new or old (module doc).

    A missing folder or header is a FileNotFoundError, a file given as the folder, a header that is no JSON
    object or lacks the family's keys a ValueError, each naming the path."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"index {folder} is a file, not an index folder")
    path = meta_path(folder)
    if path is None:
        raise FileNotFoundError(
            f"{folder / META_FILE} not found: {folder} is not an index folder (sentcl index build or sentcl "
            "search --index writes one)"
        )
    meta = read_json(path, what="index metadata")
    if path.name == LEGACY_ANN_FILE:
        if meta.get("format") != LEGACY_ANN_FORMAT:
            raise ValueError(f"{path}: not a sentcl faiss index (format {meta.get('format')!r})")
        meta = {**meta, "format": FORMAT, "legacy": LEGACY_ANN_FILE}
    elif "format" not in meta:  # a search cache written before the family
        if not isinstance(meta.get("normalize"), bool):
            raise ValueError(f"{path}: 'normalize' must be true or false, got {meta.get('normalize')!r}")
        meta = {**meta, "format": FORMAT, "type": EXACT, "count": meta.get("size"), "legacy": META_FILE}
    return path, check(meta, HEADER, f"{path} (index metadata)", ValueError, "rebuild the index")


def kind_of(folder: str | Path) -> str | None:
    """The folder's index type (``exact``, ``flat``, ``ivf``, ...), or None when it holds no readable
    header (never raises: the caller's reader names the problem)."""
    try:
        return str(read_meta(folder)[1]["type"])
    except (OSError, ValueError, json.JSONDecodeError):
        return None
