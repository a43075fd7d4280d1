"""Approximate nearest-neighbour indexes with faiss over sharded embeddings (``sentcl index build``).

Metric: inner product of L2-normalised vectors, i.e. cosine (rows and queries are normalised here,
whatever the encode did). Types:

* ``flat``: ``IndexFlatIP``, exact search (the reference);
* ``ivf``: ``IndexIVFFlat``, k-means into ``nlist`` cells (default 4·√N), searching the ``nprobe`` nearest;
* ``hnsw``: a graph with ``M`` links per node; ``efConstruction`` / ``efSearch``; storage ``flat``
  (``IndexHNSWFlat``, 4·D bytes a vector) or ``sq8`` (``IndexHNSWSQ`` with 8-bit scalar quantisation, D
  bytes a vector, trained on a sample: per-dimension ranges);
* ``ivfpq``: ``IndexIVFPQ``, IVF with product-quantised codes (``pq_m`` sub-vectors of ``pq_bits``):
  ``pq_m`` bytes a vector instead of 4·D, at a cost in recall.

Training (ivf, ivfpq, hnsw with sq8) uses a uniform sample of ``train_size`` rows (default 40·nlist, or 65,536 for sq8; at most N); vectors
are then added shard by shard, so memory is the index itself plus one shard. The folder holds
``index.faiss`` and ``faiss.json`` (type, dim, count, metric, model, pooler, parameters, the shards'
folder), written into a temporary folder renamed into place. ``open_index`` reads flat/ivf/ivfpq
memory-mapped (``faiss.IO_FLAG_MMAP``); hnsw is read into memory.
"""

from __future__ import annotations

import importlib
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from sentcl.extras import extra_hint
from sentcl.files.read import load_npy, read_json
from sentcl.index.shards import ShardSet
from sentcl.version import __version__

logger = logging.getLogger(__name__)
TYPES = ("flat", "ivf", "hnsw", "ivfpq")
HNSW_STORAGES = ("flat", "sq8")
SQ8_TRAIN_SIZE = 65_536
# how faiss maps each type from disk: flat through IO_FLAG_MMAP_IFC (its codes), IVF lists through IO_FLAG_MMAP
MMAP_FLAGS = {"flat": "IO_FLAG_MMAP_IFC", "ivf": "IO_FLAG_MMAP", "ivfpq": "IO_FLAG_MMAP"}
INDEX_FILE = "index.faiss"
META_FILE = "faiss.json"
# the corpus row of each index id, when tuning held rows out and added them last (int64, memory-mapped)
ROW_MAP_FILE = "rows.npy"
FORMAT = "sentcl-faiss-index"
FAISS_HELP = f"faiss is not installed: pip install faiss-cpu, or {extra_hint('faiss')}"


def import_faiss() -> ModuleType:
    try:
        return importlib.import_module("faiss")
    except ImportError as err:
        raise ImportError(FAISS_HELP) from err


DEFAULT_NPROBE = 32  # ivf/ivfpq search setting when no recall target is set
DEFAULT_EF_SEARCH = 128  # hnsw search setting when no recall target is set
DEFAULT_TARGET_RECALL = 0.95


def default_nlist(count: int) -> int:
    """IVF cells for N vectors: round(4·√N), at most N // 39 (faiss wants >= 39 training points a cell), >= 1.

    Chosen on real MiniLM embeddings (120,000 rows, tuned to the same recall): 2·√N was slower one query at a
    time, 8·√N no faster and 2.5× the build time (docs/performance.md, "Search on real embeddings")."""
    return max(1, min(round(4 * math.sqrt(count)), count // 39))


@dataclass
class IndexParams:
    """Build and search settings; None means "derive" (nlist from N; the search setting from the recall
    target, ``sentcl.index.tuning``; without a target, nprobe 32 / efSearch 128 / refine 1)."""

    nlist: int | None = None
    nprobe: int | None = None
    hnsw_m: int = 32  # M 16 measured on real embeddings: a faster build, less recall at the tuned setting
    ef_construction: int = 80
    ef_search: int | None = None
    hnsw_storage: str = "flat"
    pq_m: int | None = None
    pq_bits: int = 8
    refine: int | None = None
    train_size: int | None = None
    target_recall: float | None = DEFAULT_TARGET_RECALL
    tune_queries: int = 1000

    def explicit(self, kind: str) -> dict[str, int]:
        """The search settings of ``kind`` given by the caller (not tuned, only measured)."""
        keys = {"ivf": ("nprobe",), "ivfpq": ("nprobe", "refine"), "hnsw": ("ef_search",)}.get(kind, ())
        return {k: getattr(self, k) for k in keys if getattr(self, k) is not None}

    def resolved(self, kind: str, dim: int, count: int) -> dict[str, Any]:
        """The parameters that apply to ``kind`` with defaults filled in (search settings before tuning)."""
        if self.target_recall is not None and not 0 < self.target_recall <= 1:
            raise ValueError(f"the recall target must lie in (0, 1], got {self.target_recall}")
        if kind in ("ivf", "ivfpq"):
            nlist = self.nlist or default_nlist(count)
            if nlist > count:
                raise ValueError(f"nlist={nlist} exceeds the {count} vectors to index")
            out: dict[str, Any] = {
                "nlist": nlist,
                "nprobe": min(self.nprobe or DEFAULT_NPROBE, nlist),
                "train_size": min(count, self.train_size or 40 * nlist),
            }
            if kind == "ivfpq":
                pq_m = self.pq_m or _default_pq_m(dim)
                if dim % pq_m:
                    raise ValueError(f"pq_m={pq_m} must divide the dimension {dim}")
                out.update(pq_m=pq_m, pq_bits=self.pq_bits, refine=self.refine or 1)
            return out
        if kind == "hnsw":
            if self.hnsw_storage not in HNSW_STORAGES:
                raise ValueError(
                    f"unknown hnsw storage {self.hnsw_storage!r}; valid: {', '.join(HNSW_STORAGES)}"
                )
            hnsw: dict[str, Any] = {
                "hnsw_m": self.hnsw_m,
                "ef_construction": self.ef_construction,
                "ef_search": self.ef_search or DEFAULT_EF_SEARCH,
                "hnsw_storage": self.hnsw_storage,
            }
            if self.hnsw_storage == "sq8":
                hnsw["train_size"] = min(count, self.train_size or SQ8_TRAIN_SIZE)
            return hnsw
        return {}


def _default_pq_m(dim: int) -> int:
    """Sub-vectors of 8 dimensions where that divides D (48 for 384), else the largest divisor <= D/8."""
    for m in range(max(1, dim // 8), 0, -1):
        if dim % m == 0:
            return m
    return 1


def new_index(kind: str, dim: int, params: dict[str, Any]) -> Any:
    """An empty (untrained) faiss index of ``kind`` for inner product."""
    faiss = import_faiss()
    ip = faiss.METRIC_INNER_PRODUCT
    if kind == "flat":
        return faiss.IndexFlatIP(dim)
    if kind == "hnsw":
        if params.get("hnsw_storage", "flat") == "sq8":
            index = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_8bit, params["hnsw_m"], ip)
        else:
            index = faiss.IndexHNSWFlat(dim, params["hnsw_m"], ip)
        index.hnsw.efConstruction = params["ef_construction"]
        index.hnsw.efSearch = params["ef_search"]
        return index
    quantizer = faiss.IndexFlatIP(dim)
    if kind == "ivf":
        index = faiss.IndexIVFFlat(quantizer, dim, params["nlist"], ip)
    elif kind == "ivfpq":
        index = faiss.IndexIVFPQ(quantizer, dim, params["nlist"], params["pq_m"], params["pq_bits"], ip)
    else:
        raise ValueError(f"unknown index type {kind!r}; valid: {', '.join(TYPES)}")
    index.nprobe = params["nprobe"]
    return index


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Float32 copy with unit-norm rows (zero rows stay zero): (N, D)."""
    x = np.array(x, dtype=np.float32, order="C", copy=True)  # (N, D)
    norms = np.linalg.norm(x, axis=1, keepdims=True)  # (N, 1)
    np.divide(x, norms, out=x, where=norms > 0)
    return x


def train_and_fill(kind: str, dim: int, count: int, sample: Any, chunks: Any, params: dict[str, Any]) -> Any:
    """Build an index: ``sample()`` -> training rows, ``chunks()`` -> iterator of (rows, D) arrays."""
    index = new_index(kind, dim, params)
    if not index.is_trained:
        train = unit_rows(sample(params["train_size"]))  # (T, D)
        logger.info("training %s on %d sampled vectors", kind, len(train))
        index.train(train)
    added = 0
    for chunk in chunks():
        index.add(unit_rows(chunk))
        added += len(chunk)
        logger.info("added %d/%d vectors", added, count)
    return index


IDENTITY_KEYS = ("model", "model_path", "model_fingerprint", "pooler", "max_length", "truncate_dim")


def build_from_shards(
    embeddings: str | Path | ShardSet,
    output: str | Path,
    kind: str,
    params: IndexParams | None = None,
    seed: int = 0,
    queries: str | Path | None = None,
) -> Path:
    """Build a ``kind`` index over the shards in ``embeddings``, tune its search setting to the recall
    target (``sentcl.index.tuning``; ``queries``: a .npy of query embeddings instead of a corpus sample)
    and save it to the folder ``output``."""
    from sentcl.index import tuning

    faiss = import_faiss()
    if kind not in TYPES:
        raise ValueError(f"unknown index type {kind!r}; valid: {', '.join(TYPES)}")
    output = Path(output)
    if output.exists() and not output.is_dir():
        raise ValueError(f"--output {output} is a file, not a folder")
    params = params or IndexParams()
    shards = embeddings if isinstance(embeddings, ShardSet) else ShardSet.open(embeddings)
    resolved = params.resolved(kind, shards.dim, shards.rows)
    tune = kind != "flat" and params.target_recall is not None
    held = tuning.held_out_rows(shards.rows, params.tune_queries, seed) if tune and not queries else None
    kept = None if held is None else np.setdiff1d(np.arange(shards.rows), held)  # (N - H,) row of each id

    def chunks() -> Any:  # the shards in order, the held-out rows left out until tuned
        for start, arr in shards.iter_arrays():
            yield arr if held is None else arr[~np.isin(np.arange(start, start + len(arr)), held)]

    start = time.perf_counter()
    index = train_and_fill(kind, shards.dim, shards.rows, lambda n: shards.sample(n, seed), chunks, resolved)
    m = shards.manifest
    meta = {
        "format": FORMAT,
        "sentcl_version": __version__,
        "type": kind,
        "dim": shards.dim,
        "count": shards.rows,
        "metric": "inner_product",
        "normalized": True,
        **{k: m.get(k) for k in IDENTITY_KEYS if k in m or k in ("model", "pooler", "max_length")},
        "embeddings": str(Path(shards.folder).resolve()),
        "params": resolved,
        "seed": seed,
        "build_seconds": round(time.perf_counter() - start, 3),
    }
    row_map = None
    if tune:
        ann = AnnIndex(output, index, meta, row_map=kept)
        ann._shards = shards
        probe = (
            tuning.probe_from_file(shards, Path(queries)) if queries else tuning.probe_from_rows(shards, held)  # type: ignore[arg-type]
        )
        meta["tuning"] = tuning.tune(ann, kind, resolved, probe, params.target_recall, params.explicit(kind))
        meta["params"] = {**resolved, **meta["tuning"]["setting"]}  # the tuned setting: one home, params
        if held is not None:  # now the held-out rows join the index, as the last ids
            index.add(unit_rows(shards.gather(held)))
            row_map = np.concatenate([kept, held])  # type: ignore[list-item]
            meta["row_map"] = ROW_MAP_FILE
    if int(index.ntotal) != shards.rows:
        raise RuntimeError(f"the index holds {index.ntotal} vectors, the shards {shards.rows}")
    _save_folder(faiss, index, meta, output, row_map)
    return output


def _save_folder(
    faiss: ModuleType, index: Any, meta: dict[str, Any], output: Path, row_map: np.ndarray | None = None
) -> None:
    """index.faiss + faiss.json into a temporary folder (fsynced), then renamed onto ``output``.

    A folder that cannot be written (read-only, full disk) raises the OS's error naming the file, or
    ``sentcl.files.atomic.AtomicWriteError`` naming the folder; nothing is left behind."""
    import json

    from sentcl.files.atomic import atomic_dir_write

    def write(tmp: Path) -> None:
        tmp.mkdir(parents=True)
        try:  # through Python's writes: a refused one is an OSError with its errno, naming the file
            with open(tmp / INDEX_FILE, "wb") as handle:
                faiss.write_index(index, faiss.PyCallbackIOWriter(handle.write))
        except OSError as err:
            err.filename = err.filename or str(tmp / INDEX_FILE)
            raise
        if row_map is not None:
            np.save(tmp / ROW_MAP_FILE, np.asarray(row_map, dtype=np.int64))
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")

    atomic_dir_write(output, write)  # fsyncs every file and folder of tmp, renames, fsyncs output.parent


def is_ann_index(folder: str | Path) -> bool:
    """Whether ``folder`` holds an index built by ``sentcl index build``."""
    return (Path(folder) / META_FILE).is_file()


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
        if refine is not None and self.kind == "ivfpq":
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
        if self.kind == "ivfpq":
            out["refine"] = self.refine
        return out

    def check_dim(self, dim: int, model: str = "the model") -> None:
        if dim != self.dim:
            raise ValueError(
                f"{self.folder}: the index holds {self.dim}-dimensional vectors (model "
                f"{self.meta.get('model')!r}) but {model} gives {dim}-dimensional embeddings; "
                "search with the model that encoded the corpus"
            )

    def check_encoder(self, model: str, encoder: Any, max_length: int | None, allow: bool = False) -> None:
        """Refuse an encoder whose model, pooler, max length or truncation differs from the index's
        (``sentcl.index.identity``; both values named) unless ``allow``, then warned; the dim always."""
        from sentcl.index.identity import check_encoder, model_identity

        self.check_dim(int(encoder.embedding_dim), f"model {model!r}")  # never searchable, allowed or not
        now = model_identity(model, encoder, max_length)
        for found in check_encoder(self.folder, self.meta, now, allow):
            logger.warning("%s: %s (--allow-model-mismatch)", self.folder, found)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows per query by cosine: scores (Q, k) float32 descending, ids (Q, k) int64 (k capped at N).

        ivfpq with refine r > 1: the top r·k PQ candidates are re-scored with the stored vectors."""
        q = np.asarray(queries, dtype=np.float32)
        if q.ndim != 2:
            raise ValueError(f"queries must be a (Q, D) array, got shape {q.shape}")
        self.check_dim(q.shape[1], "the queries")
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        q = unit_rows(q)  # (Q, D)
        k = min(k, len(self))
        wide = min(k * self.refine, len(self))
        scores, ids = self.index.search(q, wide)  # (Q, wide), (Q, wide)
        if self.row_map is not None:
            ids = np.where(ids >= 0, np.asarray(self.row_map)[np.maximum(ids, 0)], -1)  # (Q, wide) rows
        if wide > k:
            scores, ids = self._rescore(q, np.asarray(ids, dtype=np.int64), k)
        return np.asarray(scores, dtype=np.float32), np.asarray(ids, dtype=np.int64)

    def _rescore(self, q: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact cosine of each candidate (vectors from the shards), top k of them: (Q, k), (Q, k)."""
        valid = ids >= 0  # (Q, W)
        vecs = unit_rows(self.shards.gather(np.where(valid, ids, 0).reshape(-1)))  # (Q·W, D)
        vecs = vecs.reshape(ids.shape[0], ids.shape[1], -1)  # (Q, W, D)
        exact = np.einsum("qwd,qd->qw", vecs, q)  # (Q, W)
        exact[~valid] = -np.inf
        top = np.argsort(-exact, axis=1, kind="stable")[:, :k]  # (Q, k)
        ids_k = np.take_along_axis(ids, top, axis=1)
        scores_k = np.take_along_axis(exact, top, axis=1)
        scores_k[ids_k < 0] = -np.inf
        return scores_k, ids_k

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
        }


def open_index(
    folder: str | Path,
    *,
    nprobe: int | None = None,
    ef_search: int | None = None,
    refine: int | None = None,
    mmap: bool = True,
) -> AnnIndex:
    """Open a folder written by ``sentcl index build`` (flat/ivf/ivfpq memory-mapped), at its tuned search
    setting (``faiss.json`` params); ``nprobe``/``ef_search``/``refine`` override it."""
    faiss = import_faiss()
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"index {folder} is a file, not a folder built by sentcl index build")
    meta = read_json(folder / META_FILE, what="index metadata")
    missing = [k for k in ("type", "dim", "count", "embeddings", "params") if k not in meta]
    if missing or meta.get("format") != FORMAT:
        raise ValueError(
            f"{folder / META_FILE}: not a sentcl faiss index (missing {', '.join(missing) or 'format'})"
        )
    if meta["type"] not in TYPES:
        raise ValueError(f"{folder / META_FILE}: unknown index type {meta['type']!r}")
    path = folder / INDEX_FILE
    if not path.is_file() or path.stat().st_size == 0:
        raise FileNotFoundError(f"{path} is missing or empty; rebuild the index with sentcl index build")
    flags = MMAP_FLAGS.get(meta["type"], 0) if mmap else 0
    try:
        index = faiss.read_index(str(path), getattr(faiss, flags) if flags else 0)
    except RuntimeError as err:
        first = str(err).strip().splitlines()[-1] if str(err).strip() else "unreadable"
        raise ValueError(f"{path}: not a readable faiss index ({first}); rebuild it") from None
    if index.d != meta["dim"] or index.ntotal != meta["count"]:
        raise ValueError(
            f"{path} holds {index.ntotal} x {index.d} vectors but {folder / META_FILE} says "
            f"{meta['count']} x {meta['dim']}; rebuild the index"
        )
    row_map = None
    if meta.get("row_map"):
        row_map = load_npy(folder / ROW_MAP_FILE)
        if row_map.shape != (meta["count"],):
            raise ValueError(
                f"{folder / ROW_MAP_FILE} holds {row_map.shape} ids, not {meta['count']}; rebuild"
            )
    ann = AnnIndex(folder, index, meta, row_map)
    saved = meta["params"]
    ann.configure(saved.get("nprobe"), saved.get("ef_search"), saved.get("refine"))
    ann.configure(nprobe, ef_search, refine)
    return ann
