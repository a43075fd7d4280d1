"""Corpora that do not fit in memory: sharded embeddings, faiss indexes, hard-negative mining.

The one function a caller needs to search a built index is ``open_index(folder)`` (see ``faiss_index``):
it returns an object with ``search(query_embeddings, k) -> (scores, ids)``, ``texts(ids)`` and
``lines(ids)``. Heavy imports (faiss, torch) happen when a function is called, not on import.
"""

from __future__ import annotations

from typing import Any

__all__ = ["open_index", "is_ann_index"]


def open_index(folder: Any, **kwargs: Any) -> Any:  # noqa: ANN401 - an AnnIndex
    """Open a folder written by ``sentcl index build``; see ``sentcl.index.faiss_index.open_index``."""
    from sentcl.index.faiss_index import open_index as _open

    return _open(folder, **kwargs)


def is_ann_index(folder: Any) -> bool:  # noqa: ANN401
    from sentcl.index.faiss_index import is_ann_index as _is

    return _is(folder)
