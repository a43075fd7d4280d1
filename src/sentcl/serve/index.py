"""The one place where the service touches the search index formats.

``--index DIR`` is any folder of the index format family, opened by its one reader (``sentcl.index.open_index``):
a folder built by ``sentcl index build`` (a faiss index over sharded embeddings, searched at its tuned setting,
hits' texts read back from the encoded input through the shards' line offsets) or a cache saved by ``sentcl
search --index`` (exact search over the embeddings it holds, texts in ``texts.jsonl``), new or old. Both answer
``.search(queries (Q, D), k) -> (scores, ids)``, ``.texts[i]``, ``len`` and ``.summary()`` (for /info). A store
(``sentcl index build --store``: a folder or ``s3://``) is served at the version it held when opened; ``reload()``
opens the index again where it lives (a store's newest published version), checked as at start-up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np


class _LineTexts(Sequence[str]):
    """Row id -> the corpus line, read through the index when asked (nothing held in memory)."""

    def __init__(self, ann: Any) -> None:
        self.ann = ann

    def __len__(self) -> int:
        return len(self.ann)

    def __getitem__(self, i: int) -> str:  # type: ignore[override]
        return self.ann.texts([int(i)])[0]

    def many(self, ids: Sequence[int]) -> list[str]:
        """The texts of several rows in one read (a store: one take for a request's hits, not one each)."""
        return self.ann.texts([int(i) for i in ids]) if len(ids) else []


class AnnSearchIndex:
    """An opened index folder behind the service's index interface."""

    def __init__(self, ann: Any, reopen: Callable[[], AnnSearchIndex] | None = None) -> None:
        self.ann = ann
        self.texts = _LineTexts(ann)
        self.backend = getattr(ann, "backend", None) or (
            ann.index.backend if ann.kind == "exact" else f"faiss-{ann.kind}"
        )
        self._reopen = reopen

    def reload(self) -> AnnSearchIndex:
        """The index opened again where it lives, checked as at start-up (this one keeps answering meanwhile)."""
        if self._reopen is None:
            raise ValueError("this index was not opened from a location: nothing to reload")
        return self._reopen()

    def __len__(self) -> int:
        return len(self.ann)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids), each (Q, min(k, N)); a hit an ANN search did not fill has id -1 (/search skips it)."""
        return self.ann.search(queries, k)

    def summary(self) -> dict[str, Any]:
        return {**self.ann.summary(), "backend": self.backend, "path": str(self.ann.folder)}


def load_search_index(
    folder: str | Path,  # or an s3:// store
    encoder: Any,  # the loaded encoder (or, from older callers, its embedding dimension)
    model: str = "the model",
    max_length: int | None = None,
    allow_model_mismatch: bool = False,
) -> Any:
    """The index for /search; FileNotFoundError or ValueError (printed as one line by the command) when the
    folder is no index folder, has no texts, or was built by another encoder (model, pooler, max length,
    truncation: refused unless ``allow_model_mismatch``; the dimension always)."""
    from sentcl.index import open_index

    def reopen() -> AnnSearchIndex:
        return load_search_index(folder, encoder, model, max_length, allow_model_mismatch)

    if "://" not in str(folder) and not Path(folder).is_dir():
        raise FileNotFoundError(
            f"index folder {folder} does not exist (build one with sentcl index build, or sentcl search --index)"
        )
    embedding_dim = int(encoder) if isinstance(encoder, int) else int(encoder.embedding_dim)
    index = open_index(folder)
    if index.kind == "exact":
        if index.index.texts is None:
            raise ValueError(f"index {folder} has no texts.jsonl: the service returns texts with its hits")
        index.check_dim(embedding_dim)
        return AnnSearchIndex(index, reopen)
    if isinstance(encoder, int):  # only the dimension is known
        index.check_dim(embedding_dim)
    else:
        index.check_encoder(model, encoder, max_length, allow_model_mismatch)
    index.check_texts()  # the texts of the hits are read from the encoded input, or the store
    return AnnSearchIndex(index, reopen)
