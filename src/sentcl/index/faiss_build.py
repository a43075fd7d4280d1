"""Building a faiss index over sharded embeddings (``sentcl index build``): an empty index of a type, trained on a
uniform sample, filled shard by shard, tuned to the recall target (``sentcl.index.tuning``) and saved as a
folder (``index.faiss`` + ``index.json``, ``sentcl.index.format``) written into a temporary folder renamed into place. The compressed
types (``binary``, ``int8``) are made, filled and written by ``sentcl.index.quantized``."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from sentcl.data.shards import ShardSet
from sentcl.files.atomic import dumps_strict
from sentcl.files.fingerprint import file_records, shards_fingerprint
from sentcl.files.output import Input, claim_folder, write_folder
from sentcl.index import quantized
from sentcl.index.faiss_index import (
    INDEX_FILE,
    ROW_MAP_FILE,
    AnnIndex,
    import_faiss,
)
from sentcl.index.faiss_params import TYPES, IndexParams
from sentcl.index.format import META_FILE, header
from sentcl.similarity import unit_rows

logger = logging.getLogger(__name__)


def new_index(kind: str, dim: int, params: dict[str, Any]) -> Any:
    """An empty (untrained) faiss index of ``kind`` for inner product."""
    faiss = import_faiss()
    ip = faiss.METRIC_INNER_PRODUCT
    if kind in quantized.KINDS:
        return quantized.new_quantized(faiss, kind, dim, params)
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


def train_and_fill(kind: str, dim: int, count: int, sample: Any, chunks: Any, params: dict[str, Any]) -> Any:
    """Build an index: ``sample()`` -> training rows, ``chunks()`` -> iterator of (rows, D) arrays."""
    index = new_index(kind, dim, params)
    if not index.is_trained:
        train = unit_rows(np.asarray(sample(params["train_size"]), dtype=np.float32))  # (T, D)
        logger.info("training %s on %d sampled vectors", kind, len(train))
        index.train(train)
    added = 0
    for chunk in chunks():
        index.add(quantized.searched_form(kind, unit_rows(np.asarray(chunk, dtype=np.float32))))
        added += len(chunk)
        logger.info("added %d/%d vectors", added, count)
    return index


IDENTITY_KEYS = ("model", "model_path", "model_sha256", "pooler", "max_length", "truncate_dim")


def build_from_shards(
    embeddings: str | Path | ShardSet,
    output: str | Path,
    kind: str,
    params: IndexParams | None = None,
    seed: int = 0,
    queries: str | Path | None = None,
    overwrite: bool = False,
) -> Path:
    """Build a ``kind`` index over the shards in ``embeddings``, tune its search setting to the recall
    target (``sentcl.index.tuning``; ``queries``: a .npy of query embeddings instead of a corpus sample)
    and save it to the folder ``output`` (``sentcl.files.output``: a new or empty folder, or with
    ``overwrite`` an earlier index; never a folder of other files, nor the shards themselves)."""
    from sentcl.index import tuning

    faiss = import_faiss()
    if kind not in TYPES:
        raise ValueError(f"unknown index type {kind!r}; valid: {', '.join(TYPES)}")
    output = Path(output)
    params = params or IndexParams()
    shards = embeddings if isinstance(embeddings, ShardSet) else ShardSet.open(embeddings)
    inputs = index_inputs(shards.folder, queries)
    claim_folder(output, "index", "--output", inputs, replace=True, overwrite=overwrite)
    resolved = params.resolved(kind, shards.dim, shards.rows)
    tune = kind != "flat" and params.target_recall is not None
    if queries and not tune:
        why = "--type flat is exact search" if kind == "flat" else "no --target-recall was asked"
        raise ValueError(
            f"--queries {queries}: it tunes an approximate index's search setting, and {why}; drop it"
        )
    # the user's queries read and checked before the build (sentcl.files.arrays), not after it
    outside = tuning.probe_from_file(shards, Path(queries)) if tune and queries else None
    held = tuning.held_out_rows(shards.rows, params.tune_queries, seed) if tune and not queries else None
    kept = None if held is None else np.setdiff1d(np.arange(shards.rows), held)  # (N - H,) row of each id

    def chunks() -> Any:  # the shards in order, the held-out rows left out until tuned
        for start, arr in shards.iter_arrays():
            yield arr if held is None else arr[~np.isin(np.arange(start, start + len(arr)), held)]

    start = time.perf_counter()
    index = train_and_fill(kind, shards.dim, shards.rows, lambda n: shards.sample(n, seed), chunks, resolved)
    m = shards.manifest
    meta = {
        **header(kind, shards.dim, shards.rows),
        "metric": "inner_product",
        "normalized": True,
        **{k: m.get(k) for k in IDENTITY_KEYS if k in m or k in ("model", "pooler", "max_length")},
        "embeddings": str(Path(shards.folder).resolve()),
        "shards_sha256": shards_fingerprint(m),  # what the ids point at (identity.check_shards)
        "params": resolved,
        "seed": seed,
        "build_seconds": round(time.perf_counter() - start, 3),
    }
    row_map = None
    if tune:
        ann = AnnIndex(output, index, meta, row_map=kept)
        ann._shards = shards
        probe = outside or tuning.probe_from_rows(shards, held)  # type: ignore[arg-type]
        meta["tuning"] = tuning.tune(ann, kind, resolved, probe, params.target_recall, params.explicit(kind))
        meta["params"] = {**resolved, **meta["tuning"]["setting"]}  # the tuned setting: one home, params
        if held is not None:  # now the held-out rows join the index, as the last ids
            index.add(
                quantized.searched_form(kind, unit_rows(np.asarray(shards.gather(held), dtype=np.float32)))
            )
            row_map = np.concatenate([kept, held])  # type: ignore[list-item]
            meta["row_map"] = ROW_MAP_FILE
    if int(index.ntotal) != shards.rows:
        raise RuntimeError(f"the index holds {index.ntotal} vectors, the shards {shards.rows}")
    _save_folder(faiss, index, meta, output, row_map, inputs, overwrite)
    return output


def index_inputs(embeddings: str | Path, queries: str | Path | None) -> list[Input]:
    """What an index build reads (its output may live inside the shard folder, as the default does)."""
    found = [Input(Path(embeddings), "--embeddings", holds_outputs=True)]
    return found + ([Input(Path(queries), "--queries")] if queries else [])


def _save_folder(
    faiss: ModuleType,
    index: Any,
    meta: dict[str, Any],
    output: Path,
    row_map: np.ndarray | None,
    inputs: list[Input],
    overwrite: bool,
) -> None:
    """index.faiss + index.json into a temporary folder (fsynced), then renamed onto ``output``.

    A folder that cannot be written (read-only, full disk) raises the OS's error naming the file, or
    ``sentcl.files.atomic.AtomicWriteError`` naming the folder; nothing is left behind."""

    def write(tmp: Path) -> None:
        try:  # through Python's writes: a refused one is an OSError with its errno, naming the file
            with open(tmp / INDEX_FILE, "wb") as handle:
                quantized.write(faiss, index, handle.write)
        except OSError as err:
            err.filename = err.filename or str(tmp / INDEX_FILE)
            raise
        if row_map is not None:
            np.save(tmp / ROW_MAP_FILE, np.asarray(row_map, dtype=np.int64))
        meta["files"] = file_records(tmp, [INDEX_FILE] + ([ROW_MAP_FILE] if row_map is not None else []))
        (tmp / META_FILE).write_text(dumps_strict(meta) + "\n", encoding="utf-8")

    write_folder(output, "index", write, "--output", inputs, overwrite=overwrite)  # atomic, marked
