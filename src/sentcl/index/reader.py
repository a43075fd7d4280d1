"""The one reader of sentcl's index folders: ``open_index(folder)`` opens every type of the format family
(``sentcl.index.format``), new or old, and answers with one interface.

* a ``sentcl index build`` folder (``flat``, ``ivf``, ``hnsw``, ``ivfpq``, ``binary``, ``int8``; ``index.json``
  or an older ``faiss.json``): ``sentcl.index.faiss_index.AnnIndex``, at its tuned search setting;
* a ``sentcl search --index`` cache (``exact``; its ``index.json`` new or old): ``ExactFolder``;
* a store (``sentcl index build --store``: a LanceDB folder or ``s3://`` location): ``sentcl.index.store.StoreIndex``.

All answer ``search(queries (Q, D), k) -> (scores (Q, k), ids (Q, k))``, ``texts(ids)``, ``lines(ids)``,
``len``, ``dim``, ``kind``, ``meta``, ``folder``, ``check_dim``, ``summary()`` and ``memory_bytes()``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sentcl.index.format import EXACT, read_meta
from sentcl.index.store import is_store, open_store  # light: LanceDB itself is imported when a store opens


class ExactFolder:
    """A saved exact index (``sentcl.index.exact.load_index``) behind the reader's interface; row r is the
    r-th line of its ``texts.jsonl`` (``lines`` answers r + 1)."""

    kind = EXACT

    def __init__(self, folder: Path, meta: dict[str, Any], backend: str = "auto") -> None:
        from sentcl.index.exact import load_index

        self.folder = folder
        self.meta = meta
        self.index = load_index(folder, backend)

    def __len__(self) -> int:
        return len(self.index)

    @property
    def dim(self) -> int:
        return self.index.dim

    def check_dim(self, dim: int, model: str = "the model") -> None:
        if dim != self.dim:
            from sentcl.data.vector_identity import dim_mismatch

            raise ValueError(dim_mismatch(f"index {self.folder}", self.dim, self.meta, model, dim))

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self.index.search(queries, k)

    def texts(self, ids: np.ndarray | list[int]) -> list[str]:
        if self.index.texts is None:
            raise ValueError(f"index {self.folder} has no texts.jsonl: it holds no texts to return")
        return [self.index.texts[int(i)] for i in ids]

    def lines(self, ids: np.ndarray | list[int]) -> list[int]:
        return [int(i) + 1 for i in ids]

    def memory_bytes(self) -> int:
        return int(self.index.embeddings.nbytes)

    def summary(self) -> dict[str, Any]:
        return {"type": EXACT, "size": len(self), "dim": self.dim, "recall_at_10": 1.0}


def open_index(folder: str | Path, **settings: Any) -> Any:  # noqa: ANN401 - AnnIndex or ExactFolder
    """Open any index folder sentcl wrote (module doc). ``settings``: an ANN index's search setting
    (``nprobe``, ``ef_search``, ``refine``, ``mmap``), or an exact one's ``backend``."""
    if is_store(folder):  # a LanceDB store: a local folder or s3://
        return open_store(
            folder, **{k: v for k, v in settings.items() if k in ("nprobe", "ef_search", "refine")}
        )
    folder = Path(folder)
    _, meta = read_meta(folder)
    if meta["type"] == EXACT:
        return ExactFolder(folder, meta, settings.get("backend", "auto"))
    from sentcl.index.faiss_index import open_index as open_ann

    return open_ann(folder, **{k: v for k, v in settings.items() if k != "backend"})


def index_truncate_dim(location: str | Path) -> int | None:
    """The truncation (``--truncate-dim``) the vectors of the index at ``location`` were encoded with, from
    its own header (no index file read; a store's newest version), or None: what a search applies when the
    user gives none, as it takes the index's max length."""
    from sentcl.data.vector_identity import recorded_truncate_dim

    if is_store(location):
        return recorded_truncate_dim(open_store(location).meta)
    if not Path(location).is_dir():
        return None  # the index's own reader names what is wrong with it
    return recorded_truncate_dim(read_meta(Path(location))[1])
