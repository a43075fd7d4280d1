"""Corpora that do not fit in memory: sharded embeddings, faiss indexes, hard-negative mining.

The one function a caller needs to search a saved index is ``open_index(folder)`` (``sentcl.index.reader``):
it opens every folder of the format family (``sentcl.index.format``: a ``sentcl index build`` folder or a
``sentcl search --index`` cache, new or old) and returns an object with ``search(query_embeddings, k) ->
(scores, ids)``, ``texts(ids)`` and ``lines(ids)``. Heavy imports (faiss, torch) happen when a function is
called, not on import.
"""

from __future__ import annotations

from typing import Any

__all__ = ["open_index", "is_ann_index"]


def open_index(folder: Any, **kwargs: Any) -> Any:  # noqa: ANN401 - AnnIndex or ExactFolder
    """Open any index folder sentcl wrote; see ``sentcl.index.reader.open_index``."""
    from sentcl.index.reader import open_index as _open

    return _open(folder, **kwargs)


def is_ann_index(folder: Any) -> bool:  # noqa: ANN401
    """Whether ``folder`` holds an index built by ``sentcl index build`` (faiss, or a store; not a search cache)."""
    from sentcl.index.faiss_index import is_ann_index as _is
    from sentcl.index.store import is_store

    return is_store(folder) or _is(folder)
