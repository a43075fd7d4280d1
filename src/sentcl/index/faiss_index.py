"""Approximate nearest-neighbour indexes with faiss over sharded embeddings (``sentcl index build``).

Metric: inner product of L2-normalised vectors, i.e. cosine (rows and queries are normalised here,
whatever the encode did). Types:

* ``flat``: ``IndexFlatIP``, exact search (the reference);
* ``ivf``: ``IndexIVFFlat``, k-means into ``nlist`` cells (default 4·√N), searching the ``nprobe`` nearest;
* ``hnsw``: a graph with ``M`` links per node; ``efConstruction`` / ``efSearch``; storage ``flat``
  (``IndexHNSWFlat``, 4·D bytes a vector) or ``sq8`` (``IndexHNSWSQ`` with 8-bit scalar quantisation, D
  bytes a vector, trained on a sample: per-dimension ranges);
* ``ivfpq``: ``IndexIVFPQ``, IVF with product-quantised codes (``pq_m`` sub-vectors of ``pq_bits``):
  ``pq_m`` bytes a vector instead of 4·D, at a cost in recall;
* ``binary`` (sign bits, Hamming distance; flat or HNSW) and ``int8`` (scalar-quantised, flat): codes only
  in memory, the top k·refine re-scored with the float vectors of the shards (``sentcl.index.quantized``).

Training (ivf, ivfpq, hnsw with sq8) uses a uniform sample of ``train_size`` rows (default 40·nlist, or 65,536 for sq8; at most N); vectors
are then added shard by shard, so memory is the index itself plus one shard. The folder holds
``index.faiss`` and ``index.json`` (``sentcl.index.format``'s family: type, dim, count; and metric, model,
pooler, parameters, the shards' folder; an older build's ``faiss.json`` still opens), written into a temporary folder renamed into place. ``open_index`` reads flat/ivf/ivfpq
memory-mapped (``faiss.IO_FLAG_MMAP``); hnsw is read into memory. The settings are ``faiss_params``, the build
``faiss_build``; this module opens and searches a built folder.
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from sentcl.data.shards import ShardSet, read_manifest
from sentcl.data.vector_identity import check_shards, dim_mismatch, verify_index_files
from sentcl.extras import extra_hint
from sentcl.files.fields import Int, Maybe, Record, Text, check
from sentcl.files.pathcheck import input_file_problem
from sentcl.files.read import load_npy
from sentcl.index import quantized
from sentcl.index.faiss_params import REFINED, TYPES
from sentcl.index.format import FORMAT, kind_of, read_meta
from sentcl.similarity import unit_rows

logger = logging.getLogger(__name__)
# how faiss maps each type from disk: flat through IO_FLAG_MMAP_IFC (its codes), IVF lists through IO_FLAG_MMAP
MMAP_FLAGS = {"flat": "IO_FLAG_MMAP_IFC", "ivf": "IO_FLAG_MMAP", "ivfpq": "IO_FLAG_MMAP"}
INDEX_FILE = "index.faiss"
# the corpus row of each index id, when tuning held rows out and added them last (int64, memory-mapped)
ROW_MAP_FILE = "rows.npy"
RESCORE_ROWS = 65_536  # candidate vectors re-scored at once (65,536 x 384 float32: 100 MB)
#: a search setting faiss takes (a C int; nprobe is also capped by nlist when set)
_SETTING = Maybe(Int(1, 2**31 - 1))
#: the fields of index.json that opening and searching read (the others are shown, never computed with)
META_SPEC = Record(
    {
        "format": Text((FORMAT,)),
        "type": Text(TYPES),
        "dim": Int(1),
        "count": Int(0),
        "embeddings": Text(),
        "params": Record(optional={"nprobe": _SETTING, "ef_search": _SETTING, "refine": _SETTING}),
    },
    {"row_map": Maybe(Text())},
)
FAISS_HELP = f"faiss is not installed: pip install faiss-cpu, or {extra_hint('faiss')}"


def import_faiss() -> ModuleType:
    try:
        return importlib.import_module("faiss")
    except ImportError as err:
        raise ImportError(FAISS_HELP) from err


def is_ann_index(folder: str | Path) -> bool:
    """Whether ``folder`` holds an index built by ``sentcl index build`` (a faiss index over shards): its
    header says so, or it holds ``index.faiss`` (then a damaged header is named by ``open_index``)."""
    return kind_of(folder) in TYPES or (Path(folder) / INDEX_FILE).is_file()


class AnnIndex:
    """An opened index: ``search(queries, k) -> (scores, ids)``, ``texts(ids)``, ``lines(ids)``;
    ``configure(nprobe=, ef_search=, refine=)`` sets the search setting."""

    def __init__(
        self, folder: Path, index: Any, meta: dict[str, Any], row_map: np.ndarray | None = None
    ) -> None:
        self.folder = folder
        self.index = index
        self.meta = meta
        self.row_map = row_map  # (ntotal,) corpus row of each faiss id; None: the id is the row
        self.refine = 1
        self._shards: ShardSet | None = None

    @property
    def dim(self) -> int:
        return int(self.meta["dim"])

    @property
    def kind(self) -> str:
        return str(self.meta["type"])

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def configure(
        self, nprobe: int | None = None, ef_search: int | None = None, refine: int | None = None
    ) -> None:
        """Set the search setting (None keeps the current one); a setting the type lacks is ignored."""
        if nprobe is not None and hasattr(self.index, "nprobe"):
            self.index.nprobe = int(nprobe)
        if ef_search is not None and hasattr(self.index, "hnsw"):
            self.index.hnsw.efSearch = int(ef_search)
        if refine is not None and self.kind in REFINED:
            if refine < 1:
                raise ValueError(f"refine must be >= 1, got {refine}")
            self.refine = int(refine)

    def setting(self) -> dict[str, int]:
        """The search setting in use."""
        out: dict[str, int] = {}
        if hasattr(self.index, "nprobe"):
            out["nprobe"] = int(self.index.nprobe)
        if hasattr(self.index, "hnsw"):
            out["ef_search"] = int(self.index.hnsw.efSearch)
        if self.kind in REFINED:
            out["refine"] = self.refine
        return out

    def check_dim(self, dim: int, model: str = "the model") -> None:
        if dim != self.dim:
            raise ValueError(dim_mismatch(self.folder, self.dim, self.meta, model, dim))

    def check_encoder(self, model: str, encoder: Any, max_length: int | None, allow: bool = False) -> None:
        """Refuse an encoder whose model, pooler, max length or truncation differs from the index's
        (``sentcl.data.vector_identity``; both values named) unless ``allow``, then warned; the dim always."""
        from sentcl.data.vector_identity import check_encoder, model_identity

        self.check_dim(int(encoder.embedding_dim), f"model {model!r}")  # never searchable, allowed or not
        now = model_identity(model, encoder, max_length)
        for found in check_encoder(self.folder, self.meta, now, allow):
            logger.warning("%s: %s (--allow-model-mismatch)", self.folder, found)

    def check_texts(self) -> None:
        """Raise ValueError when the encoded input the hits' texts are read from is missing or changed."""
        self.shards.check_input()

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows per query by cosine: scores (Q, k) float32 descending, ids (Q, k) int64 (k capped at N).

        ivfpq with refine r > 1, binary and int8: the top r·k candidates are re-scored with the stored vectors."""
        q = np.asarray(queries, dtype=np.float32)
        if q.ndim != 2:
            raise ValueError(f"queries must be a (Q, D) array, got shape {q.shape}")
        self.check_dim(q.shape[1], "the queries")
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        q = unit_rows(q)  # (Q, D)
        k = min(k, len(self))
        wide = min(k * self.refine, len(self))
        scores, ids = self.index.search(quantized.searched_form(self.kind, q), wide)  # (Q, wide), (Q, wide)
        if ids.size and int(ids.max()) >= len(self):  # a damaged inverted list names ids it does not hold
            raise ValueError(
                f"{self.folder / INDEX_FILE} returned id {int(ids.max())}, outside its {len(self)} vectors: "
                "the file is damaged; rebuild the index"
            )
        if self.row_map is not None:
            ids = np.where(ids >= 0, np.asarray(self.row_map)[np.maximum(ids, 0)], -1)  # (Q, wide) rows
        if wide > k or self.kind == "binary":  # Hamming distances are no cosines: always re-scored
            scores, ids = self._rescore(q, np.asarray(ids, dtype=np.int64), k)
        return np.asarray(scores, dtype=np.float32), np.asarray(ids, dtype=np.int64)

    def _rescore(self, q: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact cosine of each candidate (vectors from the shards), top k of them: (Q, k), (Q, k); in
        blocks of queries holding at most ``RESCORE_ROWS`` candidate vectors (memory bounded at any r)."""
        step = max(1, RESCORE_ROWS // max(1, ids.shape[1]))
        parts = [self._rescore_block(q[i : i + step], ids[i : i + step], k) for i in range(0, len(q), step)]
        if not parts:
            return np.empty((0, k), np.float32), np.empty((0, k), np.int64)
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])  # (Q, k) each

    def _rescore_block(self, q: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        valid = ids >= 0  # (Q, W)
        vecs = unit_rows(
            np.asarray(self.shards.gather(np.where(valid, ids, 0).reshape(-1)), dtype=np.float32)
        )  # (Q·W, D)
        vecs = vecs.reshape(ids.shape[0], ids.shape[1], self.dim)  # (Q, W, D)
        exact = np.einsum("qwd,qd->qw", vecs, q)  # (Q, W)
        exact[~valid] = -np.inf
        top = np.argsort(-exact, axis=1, kind="stable")[:, :k]  # (Q, k)
        ids_k = np.take_along_axis(ids, top, axis=1)
        scores_k = np.take_along_axis(exact, top, axis=1)
        scores_k[ids_k < 0] = -np.inf
        return scores_k, ids_k

    def memory_bytes(self) -> int:
        """Bytes the opened index holds (``quantized.memory_bytes``, plus the id -> row table); the float
        vectors a re-scoring search reads stay in the shards on disk."""
        rows = 0 if self.row_map is None else int(np.asarray(self.row_map).nbytes)
        return quantized.memory_bytes(self.index) + rows

    @property
    def shards(self) -> ShardSet:
        if self._shards is None:
            self._shards = ShardSet.open(self.meta["embeddings"])
        return self._shards

    def texts(self, ids: np.ndarray | list[int]) -> list[str]:
        """The corpus lines of the given row ids (read from the encoded input file)."""
        return self.shards.texts(ids)

    def lines(self, ids: np.ndarray | list[int]) -> list[int]:
        """1-based input line numbers of the given row ids (row r is line r + 1)."""
        return [int(i) + 1 for i in ids]

    def summary(self) -> dict[str, Any]:
        """Type, size, search setting in use, and the build's measured recall and speed (if tuned)."""
        tuned = self.meta.get("tuning") or {}
        return {
            "type": self.kind,
            "size": len(self),
            "dim": self.dim,
            "setting": self.setting(),
            "target_recall": tuned.get("target_recall"),
            "recall_at_10": 1.0 if self.kind == "flat" else tuned.get("recall_at_10"),
            "qps": tuned.get("qps"),
            "tuned_setting": tuned.get("setting"),
            "memory_bytes": self.memory_bytes(),
        }


def check_row_map(row_map: np.ndarray, count: int, path: Path) -> np.ndarray:
    """``rows.npy``: the corpus row of each of the ``count`` index ids, each row once (a permutation of
    0..count-1, as the build writes it); anything else names the file and the first bad id."""
    if row_map.shape != (count,) or row_map.dtype.kind not in "iu":
        raise ValueError(
            f"{path} holds {row_map.dtype} ids of shape {row_map.shape}, not {count} whole numbers; rebuild the index"
        )
    ids = np.asarray(row_map, dtype=np.int64)
    bad = np.flatnonzero((ids < 0) | (ids >= count))
    if bad.size:
        raise ValueError(
            f"{path}: id {int(bad[0])} maps to row {int(ids[bad[0]])}, outside the corpus's {count} rows "
            f"({bad.size} such ids); rebuild the index"
        )
    seen = np.bincount(ids, minlength=count)  # (count,) how often each row is named
    if seen.max(initial=0) > 1:
        raise ValueError(
            f"{path}: row {int(seen.argmax())} is named {int(seen.max())} times; rebuild the index"
        )
    return row_map


def open_index(
    folder: str | Path,
    *,
    nprobe: int | None = None,
    ef_search: int | None = None,
    refine: int | None = None,
    mmap: bool = True,
) -> AnnIndex:
    """Open a folder written by ``sentcl index build`` (flat/ivf/ivfpq/binary/int8 memory-mapped), at its
    tuned search setting (``index.json`` params); ``nprobe``/``ef_search``/``refine`` override it."""
    faiss = import_faiss()
    folder = Path(folder)
    meta_file, meta = read_meta(folder)  # the family's reader: index.json, or an older build's faiss.json
    meta = check(meta, META_SPEC, f"{meta_file} (index metadata)", ValueError, "rebuild the index")
    path = folder / INDEX_FILE
    found = input_file_problem(path)  # a FIFO or a device in its place is named as what it is, never read
    if found is not None and not found[1]:
        raise ValueError(f"{path} {found[0]}; rebuild the index with sentcl index build")
    if found is not None or path.stat().st_size == 0:
        raise FileNotFoundError(f"{path} is missing or empty; rebuild the index with sentcl index build")
    verify_index_files(folder, meta, meta_file.name, only=INDEX_FILE)  # before faiss parses a byte of it
    kind, flags = meta["type"], MMAP_FLAGS.get(meta["type"], 0) if mmap else 0
    try:
        if kind in quantized.KINDS:
            index = quantized.read(faiss, str(path), kind, meta["params"], mmap)
        else:
            index = faiss.read_index(str(path), getattr(faiss, flags) if flags else 0)
    except RuntimeError as err:
        first = str(err).strip().splitlines()[-1] if str(err).strip() else "unreadable"
        raise ValueError(f"{path}: not a readable faiss index ({first}); rebuild it") from None
    if index.d != quantized.code_dim(kind, meta["dim"]) or index.ntotal != meta["count"]:
        raise ValueError(
            f"{path} holds {index.ntotal} x {index.d} vectors but {meta_file} says "
            f"{meta['count']} x {meta['dim']}; rebuild the index"
        )
    row_map = None
    if meta.get("row_map"):
        row_map = check_row_map(load_npy(folder / ROW_MAP_FILE), meta["count"], folder / ROW_MAP_FILE)
    # after the row map's own checks (they name the precise fault): the SHA-256 of rows.npy (index.faiss's is
    # cached now), then the shards the ids point at
    verify_index_files(folder, meta, meta_file.name)
    if isinstance(meta["embeddings"], str) and (Path(meta["embeddings"]) / "manifest.json").is_file():
        check_shards(folder, meta, read_manifest(meta["embeddings"]))
    ann = AnnIndex(folder, index, meta, row_map)
    saved = meta["params"]
    ann.configure(saved.get("nprobe"), saved.get("ef_search"), saved.get("refine"))
    ann.configure(nprobe, ef_search, refine)
    return ann
