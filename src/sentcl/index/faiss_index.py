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

from sentcl.files import read_json
from sentcl.index.shards import ShardSet
from sentcl.install import extra_hint
from sentcl.version import __version__

logger = logging.getLogger(__name__)
TYPES = ("flat", "ivf", "hnsw", "ivfpq")
HNSW_STORAGES = ("flat", "sq8")
SQ8_TRAIN_SIZE = 65_536
MMAP_TYPES = ("flat", "ivf", "ivfpq")
INDEX_FILE = "index.faiss"
META_FILE = "faiss.json"
FORMAT = "sentcl-faiss-index"
FAISS_HELP = f"faiss is not installed: pip install faiss-cpu, or {extra_hint('faiss')}"


def import_faiss() -> ModuleType:
    try:
        return importlib.import_module("faiss")
    except ImportError as err:
        raise ImportError(FAISS_HELP) from err


@dataclass
class IndexParams:
    """Build and search settings; None means "derive from the corpus size" (see the module doc)."""

    nlist: int | None = None
    nprobe: int = 32
    hnsw_m: int = 32
    ef_construction: int = 80
    ef_search: int = 128
    hnsw_storage: str = "flat"
    pq_m: int | None = None
    pq_bits: int = 8
    train_size: int | None = None

    def resolved(self, kind: str, dim: int, count: int) -> dict[str, Any]:
        """The parameters that apply to ``kind`` with defaults filled in."""
        if kind in ("ivf", "ivfpq"):
            # faiss's guideline: 4·√N to 16·√N cells, each with >= 39 training points
            nlist = self.nlist or max(1, min(round(4 * math.sqrt(count)), count // 39))
            if nlist > count:
                raise ValueError(f"nlist={nlist} exceeds the {count} vectors to index")
            out: dict[str, Any] = {
                "nlist": nlist,
                "nprobe": min(self.nprobe, nlist),
                "train_size": min(count, self.train_size or 40 * nlist),
            }
            if kind == "ivfpq":
                pq_m = self.pq_m or _default_pq_m(dim)
                if dim % pq_m:
                    raise ValueError(f"pq_m={pq_m} must divide the dimension {dim}")
                out.update(pq_m=pq_m, pq_bits=self.pq_bits)
            return out
        if kind == "hnsw":
            if self.hnsw_storage not in HNSW_STORAGES:
                raise ValueError(
                    f"unknown hnsw storage {self.hnsw_storage!r}; valid: {', '.join(HNSW_STORAGES)}"
                )
            hnsw: dict[str, Any] = {
                "hnsw_m": self.hnsw_m,
                "ef_construction": self.ef_construction,
                "ef_search": self.ef_search,
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


def build_from_shards(
    embeddings: str | Path,
    output: str | Path,
    kind: str,
    params: IndexParams | None = None,
    seed: int = 0,
) -> Path:
    """Build a ``kind`` index over the shards in ``embeddings`` and save it to the folder ``output``."""
    faiss = import_faiss()
    if kind not in TYPES:
        raise ValueError(f"unknown index type {kind!r}; valid: {', '.join(TYPES)}")
    output = Path(output)
    if output.exists() and not output.is_dir():
        raise ValueError(f"--output {output} is a file, not a folder")
    shards = ShardSet.open(embeddings)
    resolved = (params or IndexParams()).resolved(kind, shards.dim, shards.rows)
    start = time.perf_counter()
    index = train_and_fill(
        kind,
        shards.dim,
        shards.rows,
        lambda n: shards.sample(n, seed),
        lambda: (arr for _, arr in shards.iter_arrays()),
        resolved,
    )
    m = shards.manifest
    meta = {
        "format": FORMAT,
        "sentcl_version": __version__,
        "type": kind,
        "dim": shards.dim,
        "count": int(index.ntotal),
        "metric": "inner_product",
        "normalized": True,
        "model": m.get("model"),
        "pooler": m.get("pooler"),
        "max_length": m.get("max_length"),
        "embeddings": str(Path(embeddings).resolve()),
        "params": resolved,
        "seed": seed,
        "build_seconds": round(time.perf_counter() - start, 3),
    }
    _save_folder(faiss, index, meta, output)
    return output


def _save_folder(faiss: ModuleType, index: Any, meta: dict[str, Any], output: Path) -> None:
    """index.faiss + faiss.json into a temporary folder (fsynced), then renamed onto ``output``."""
    import json

    from sentcl.atomic import atomic_dir_write

    def write(tmp: Path) -> None:
        tmp.mkdir(parents=True)
        try:  # through Python's writes: a refused one is an OSError with its errno, naming the file
            with open(tmp / INDEX_FILE, "wb") as handle:
                faiss.write_index(index, faiss.PyCallbackIOWriter(handle.write))
        except OSError as err:
            err.filename = err.filename or str(tmp / INDEX_FILE)
            raise
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")

    atomic_dir_write(output, write)  # fsyncs every file and folder of tmp, renames, fsyncs output.parent


def is_ann_index(folder: str | Path) -> bool:
    """Whether ``folder`` holds an index built by ``sentcl index build``."""
    return (Path(folder) / META_FILE).is_file()


class AnnIndex:
    """An opened index: ``search(queries, k) -> (scores, ids)``, ``texts(ids)``, ``lines(ids)``."""

    def __init__(self, folder: Path, index: Any, meta: dict[str, Any]) -> None:
        self.folder = folder
        self.index = index
        self.meta = meta
        self._shards: ShardSet | None = None

    @property
    def dim(self) -> int:
        return int(self.meta["dim"])

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def check_dim(self, dim: int, model: str = "the model") -> None:
        if dim != self.dim:
            raise ValueError(
                f"{self.folder}: the index holds {self.dim}-dimensional vectors (model "
                f"{self.meta.get('model')!r}) but {model} gives {dim}-dimensional embeddings; "
                "search with the model that encoded the corpus"
            )

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows per query by cosine: scores (Q, k) float32 descending, ids (Q, k) int64 (k capped at N)."""
        q = np.asarray(queries, dtype=np.float32)
        if q.ndim != 2:
            raise ValueError(f"queries must be a (Q, D) array, got shape {q.shape}")
        self.check_dim(q.shape[1], "the queries")
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        scores, ids = self.index.search(unit_rows(q), min(k, len(self)))  # (Q, k), (Q, k)
        return np.asarray(scores, dtype=np.float32), np.asarray(ids, dtype=np.int64)

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


def open_index(
    folder: str | Path, *, nprobe: int | None = None, ef_search: int | None = None, mmap: bool = True
) -> AnnIndex:
    """Open a folder written by ``sentcl index build`` (memory-mapped for flat/ivf/ivfpq)."""
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
    path = folder / INDEX_FILE
    if not path.is_file() or path.stat().st_size == 0:
        raise FileNotFoundError(f"{path} is missing or empty; rebuild the index with sentcl index build")
    flags = faiss.IO_FLAG_MMAP if mmap and meta["type"] in MMAP_TYPES else 0
    try:
        index = faiss.read_index(str(path), flags)
    except RuntimeError as err:
        first = str(err).strip().splitlines()[-1] if str(err).strip() else "unreadable"
        raise ValueError(f"{path}: not a readable faiss index ({first}); rebuild it") from None
    if index.d != meta["dim"] or index.ntotal != meta["count"]:
        raise ValueError(
            f"{path} holds {index.ntotal} x {index.d} vectors but {folder / META_FILE} says "
            f"{meta['count']} x {meta['dim']}; rebuild the index"
        )
    if nprobe is not None and hasattr(index, "nprobe"):
        index.nprobe = nprobe
    elif hasattr(index, "nprobe") and "nprobe" in meta["params"]:
        index.nprobe = int(meta["params"]["nprobe"])
    if hasattr(index, "hnsw"):
        index.hnsw.efSearch = int(ef_search or meta["params"].get("ef_search", 128))
    return AnnIndex(folder, index, meta)
