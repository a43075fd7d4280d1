"""Nearest-neighbour search over sentence embeddings by cosine similarity (inner product of unit vectors).

score(q, c) = ⟨q/‖q‖, c/‖c‖⟩ when ``normalize`` (cosine), else ⟨q, c⟩ (inner product).

Backends: "exact" (numpy matmul over corpus chunks + argpartition; memory O(Q · chunk)), "faiss"
(``faiss.IndexFlatIP``, also exact, faster on large corpora; ``pip install faiss-cpu``), "auto"
(faiss when it is importable and the corpus has more than ``AUTO_FAISS_MIN`` rows, else exact).
An index saves to a folder as ``embeddings.npy`` (the stored, possibly normalised, rows),
``texts.jsonl`` (one JSON string a line, when texts were given) and ``index.json`` (``sentcl.index.format``'s
family, type ``exact``, with ``normalize``, ``backend`` and ``size``; an older cache's ``index.json`` of only
those settings still loads).
"""

from __future__ import annotations

import importlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from sentcl.config.names import SEARCH_BACKENDS
from sentcl.extras import extra_hint
from sentcl.index.format import EXACT, META_FILE, header, read_meta
from sentcl.similarity import unit_rows
from sentcl.types import EncodeFn

logger = logging.getLogger(__name__)

BACKENDS = SEARCH_BACKENDS
AUTO_FAISS_MIN = 50_000
FAISS_HELP = (
    f"faiss is not installed: pip install faiss-cpu, or {extra_hint('faiss')}; or use backend='exact'"
)


def _import_faiss() -> ModuleType:
    try:
        return importlib.import_module("faiss")
    except ImportError as err:
        raise ImportError(FAISS_HELP) from err


def _faiss_available() -> bool:
    try:
        importlib.import_module("faiss")
    except ImportError:
        return False
    return True


def _as_matrix(x: np.ndarray, name: str, dim: int | None = None) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim != 2 or (dim is not None and x.shape[1] != dim):
        want = f"(N, {dim})" if dim is not None else "(N, D)"
        raise ValueError(f"{name} must be a {want} array, got shape {x.shape}")
    return x


def _top_k(scores: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the k best (score desc, then id asc) of ``scores``/``ids`` (Q, M) -> (Q, k), (Q, k)."""
    if scores.shape[1] > k:
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]  # (Q, k), unordered
        scores, ids = np.take_along_axis(scores, part, 1), np.take_along_axis(ids, part, 1)
    order = np.lexsort((ids, -scores), axis=1)  # (Q, k): by score desc, ties by lower id
    return np.take_along_axis(scores, order, 1), np.take_along_axis(ids, order, 1)


class SearchIndex:
    """An embedding index; subclasses implement ``_search`` on prepared (normalised, float32) queries."""

    backend = "base"

    def __init__(
        self, embeddings: np.ndarray, texts: Sequence[str] | None = None, normalize: bool = True
    ) -> None:
        emb = _as_matrix(embeddings, "embeddings")
        if texts is not None and len(texts) != len(emb):
            raise ValueError(f"got {len(texts)} texts for {len(emb)} embeddings; they must match one to one")
        self.normalize = normalize
        self.embeddings = unit_rows(emb) if normalize else emb  # (N, D) as searched
        self.texts = list(texts) if texts is not None else None

    def __len__(self) -> int:
        return len(self.embeddings)

    @property
    def dim(self) -> int:
        return int(self.embeddings.shape[1])

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k corpus rows per query: scores (Q, k) float32 descending, indices (Q, k) int64; k capped at N."""
        q = _as_matrix(queries, "queries", self.dim)
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if len(self) == 0:
            raise ValueError("the index is empty")
        q = unit_rows(q) if self.normalize else q
        return self._search(q, min(k, len(self)))

    def _search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def save(self, folder: str | Path) -> Path:
        """Write embeddings.npy, texts.jsonl (if texts) and index.json (with their SHA-256) to ``folder``, a
        new, empty or earlier search index (``sentcl.files.output``); returns it."""
        from sentcl.files.atomic import atomic_save_npy, atomic_write, atomic_write_json
        from sentcl.files.fingerprint import file_records
        from sentcl.files.output import prepare_folder

        folder = Path(folder)
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"index {folder} is a file, not a folder")
        prepare_folder(folder, "search-index", "--index")
        atomic_save_npy(folder / "embeddings.npy", self.embeddings)  # each file: tmp + fsync + rename
        if self.texts is not None:
            text = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in self.texts).encode("utf-8")
            atomic_write(folder / "texts.jsonl", lambda f: f.write(text))
        meta = {**header(EXACT, self.dim, len(self)), "normalize": self.normalize, "backend": self.backend}
        meta["files"] = file_records(
            folder, ["embeddings.npy"] + (["texts.jsonl"] if self.texts is not None else [])
        )
        atomic_write_json(folder / META_FILE, {**meta, "size": len(self)})  # size: read by older sentcl too
        return folder


class ExactIndex(SearchIndex):
    """Brute-force search with numpy: scores = Q · C^T block by chunk, keeping a running top-k per query."""

    backend = "exact"

    def __init__(
        self,
        embeddings: np.ndarray,
        texts: Sequence[str] | None = None,
        normalize: bool = True,
        chunk_size: int = 8192,
        query_chunk_size: int = 1024,
    ) -> None:
        super().__init__(embeddings, texts, normalize)
        if chunk_size < 1 or query_chunk_size < 1:
            raise ValueError(f"chunk sizes must be >= 1, got {chunk_size} and {query_chunk_size}")
        self.chunk_size = chunk_size
        self.query_chunk_size = query_chunk_size

    def _search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Query blocks x corpus chunks: memory O(query_chunk_size · chunk_size) whatever Q and N."""
        parts = [
            self._search_block(q[i : i + self.query_chunk_size], k)
            for i in range(0, len(q), self.query_chunk_size)
        ]
        scores = np.concatenate([p[0] for p in parts]) if parts else np.empty((0, k), np.float32)  # (Q, k)
        ids = np.concatenate([p[1] for p in parts]) if parts else np.empty((0, k), np.int64)  # (Q, k)
        return scores, ids

    def _search_block(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        best_s = np.empty((len(q), 0), dtype=np.float32)  # (Q, <=k)
        best_i = np.empty((len(q), 0), dtype=np.int64)  # (Q, <=k)
        for start in range(0, len(self), self.chunk_size):
            chunk = self.embeddings[start : start + self.chunk_size]  # (C, D)
            s = q @ chunk.T  # (Q, C)
            ids = np.broadcast_to(np.arange(start, start + len(chunk), dtype=np.int64), s.shape)  # (Q, C)
            s, ids = _top_k(s, ids, min(k, len(chunk)))
            best_s = np.concatenate([best_s, s], axis=1)  # (Q, <=2k)
            best_i = np.concatenate([best_i, ids], axis=1)  # (Q, <=2k)
            best_s, best_i = _top_k(best_s, best_i, min(k, best_s.shape[1]))
        return best_s, best_i


class FaissIndex(SearchIndex):
    """``faiss.IndexFlatIP`` over the (normalised) rows: exact inner-product search in faiss."""

    backend = "faiss"

    def __init__(
        self, embeddings: np.ndarray, texts: Sequence[str] | None = None, normalize: bool = True
    ) -> None:
        faiss = _import_faiss()
        super().__init__(embeddings, texts, normalize)
        self.index: Any = faiss.IndexFlatIP(self.dim)
        self.index.add(self.embeddings)

    def _search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        scores, ids = self.index.search(q, k)  # (Q, k), (Q, k)
        return np.asarray(scores, dtype=np.float32), np.asarray(ids, dtype=np.int64)


def build_index(
    embeddings: np.ndarray,
    backend: str = "auto",
    normalize: bool = True,
    *,
    texts: Sequence[str] | None = None,
) -> SearchIndex:
    """An index over ``embeddings`` (N, D) (``texts[i]`` names row i); ``backend``: "exact", "faiss" or "auto"."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}")
    if backend == "auto":
        backend = "faiss" if len(embeddings) > AUTO_FAISS_MIN and _faiss_available() else "exact"
    if backend == "faiss":
        return FaissIndex(embeddings, texts, normalize)
    return ExactIndex(embeddings, texts, normalize)


def load_index(folder: str | Path, backend: str = "auto") -> SearchIndex:
    """Rebuild a saved index (the stored rows are already normalised if it was, so nothing changes)."""
    from sentcl.files.fingerprint import unrecorded, verify_records
    from sentcl.files.read import iter_jsonl, load_npy

    folder = Path(folder)
    meta_path, meta = read_meta(folder)
    if meta["type"] != EXACT:
        raise ValueError(
            f"{meta_path}: a {meta['type']} index of sentcl index build, not a saved search index"
        )
    if not isinstance(meta.get("normalize"), bool):
        raise ValueError(f"{meta_path}: 'normalize' must be true or false, got {meta.get('normalize')!r}")
    emb_path = folder / "embeddings.npy"
    emb = load_npy(emb_path, mmap=False)
    if emb.ndim != 2:
        raise ValueError(f"{emb_path}: expected a (N, D) array, got shape {emb.shape}")
    for key, value in (("count", len(emb)), ("size", len(emb)), ("dim", emb.shape[1])):
        if key in meta and meta[key] != value:
            raise ValueError(
                f"{emb_path} has {key} {value} but {meta_path} says {meta[key]}; rebuild the index"
            )
    texts = None
    if (folder / "texts.jsonl").is_file():
        texts = [text for _, text in iter_jsonl(folder / "texts.jsonl", expect=str)]
    if texts is not None and len(texts) != len(emb):
        raise ValueError(
            f"{folder / 'texts.jsonl'} has {len(texts)} texts for the {len(emb)} rows of {emb_path}; rebuild the index"
        )
    if "files" in meta:  # after the readers' own checks; an index of an older sentcl records no digests
        verify_records(folder, meta["files"], str(meta_path), "rebuild the index")
    else:
        logger.warning(unrecorded(str(meta_path), "rebuild the index"))
    return build_index(emb, backend, normalize=meta["normalize"], texts=texts)


def search(
    encode: EncodeFn, corpus: Sequence[str], queries: Sequence[str], k: int = 10, backend: str = "auto"
) -> list[list[tuple[str, float]]]:
    """Encode ``corpus`` and ``queries``; per query, its k most cosine-similar corpus texts with scores."""
    index = build_index(np.asarray(encode(list(corpus))), backend, texts=corpus)
    scores, ids = index.search(np.asarray(encode(list(queries))), k)
    return [
        [(corpus[j], float(s)) for s, j in zip(row_s, row_i, strict=True)]
        for row_s, row_i in zip(scores, ids, strict=True)
    ]
