"""Writing a store (``sentcl index build --store URI``): a new version of its table from sharded embeddings.

1. The rows (id, line, text, unit vector) are streamed shard by shard into a new version of the table
   (``mode="overwrite"``: one Lance commit, visible only once every data file is written); its metadata is
   the ``index.json`` of the build (``sentcl.index.store``), with a fresh ``build_id``.
2. The vector index is trained and committed as the next version: ``ivf`` (the default), ``IVF_FLAT`` with
   round(√N) cells (LanceDB's default count), inner product; or ``hnsw``, ``IVF_HNSW_SQ``: one HNSW graph of
   8-bit scalar-quantised vectors a cell of at most ``HNSW_CELL_ROWS`` rows (every cell searched), with
   sentcl's faiss HNSW defaults (M, efConstruction), its candidates re-scored from the float vectors.
3. The search setting is tuned to the recall target (``sentcl.index.tuning``, as a faiss index of that kind:
   1,000 sampled rows searched in place, each left out of its own result; the reference is the exact top-10
   of the other rows over the shards) and written into the metadata: the build's last version.
4. The build is published: the tag ``current`` moves to its last version, if no other build published
   since this one started (else this one is refused, naming the winner, and nothing of it is ever read).

A build killed before step 4 leaves the published version as it was: readers never see it.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.data.shards import ShardSet
from sentcl.files.fingerprint import shards_fingerprint
from sentcl.index.faiss_build import IDENTITY_KEYS
from sentcl.index.faiss_params import DEFAULT_EF_SEARCH, IndexParams
from sentcl.index.format import header
from sentcl.index.store import (
    META_KEY,
    STORE,
    STORE_INDEXES,
    TABLE,
    TAG,
    StoreError,
    StoreIndex,
    connect,
    first_line,
    is_uri,
    published_version,
    version_meta,
)
from sentcl.similarity import unit_rows

logger = logging.getLogger(__name__)
BATCH_ROWS = 8192  # rows a record batch holds while streaming the shards in
HNSW_CELL_ROWS = 1_000_000  # an hnsw store's graphs: one a cell of at most this many rows
# an hnsw store's candidates re-scored from the float vectors: the best k of k·2 by exact cosine (the 8-bit
# distances alone leave near ties misordered: recall@10 0.967 at any efSearch on the tests' corpus)
HNSW_REFINE = 2
KNOB = {"ivf": "nprobe", "hnsw": "ef_search"}  # the search setting tuned for each kind


def default_partitions(count: int, kind: str = "ivf") -> int:
    """IVF cells for N rows: round(√N) (LanceDB's default), at least 1 and at most N // 39; ``hnsw``: one
    cell a ``HNSW_CELL_ROWS`` rows (a graph each)."""
    if kind == "hnsw":
        return max(1, -(-count // HNSW_CELL_ROWS))
    return max(1, min(round(count**0.5), count // 39 or 1))


def _params(kind: str, partitions: int, nprobe: int | None, graph: IndexParams) -> dict[str, int]:
    """The build's index parameters and first search setting (tuned after, unless fixed)."""
    if kind == "hnsw":
        return {"nlist": partitions, "nprobe": partitions, "hnsw_m": graph.hnsw_m,
                "ef_construction": graph.ef_construction,
                "ef_search": graph.ef_search or DEFAULT_EF_SEARCH, "refine": graph.refine or HNSW_REFINE}  # fmt: skip
    return {"nlist": partitions, "nprobe": min(nprobe or 20, partitions)}


def schema(dim: int, meta: dict[str, Any]) -> Any:  # noqa: ANN401 - a pyarrow schema
    import pyarrow as pa

    fields = [
        pa.field("id", pa.int64()),
        pa.field("line", pa.int64()),
        pa.field("text", pa.string()),
        pa.field("vector", pa.list_(pa.float32(), dim)),
    ]
    return pa.schema(fields, metadata={META_KEY: json.dumps(meta)})


def row_batches(shards: ShardSet, table_schema: Any) -> Iterator[Any]:
    """The shards as record batches of at most ``BATCH_ROWS`` rows, in corpus order."""
    import pyarrow as pa

    for start, arr in shards.iter_arrays():
        for lo in range(0, len(arr), BATCH_ROWS):
            vec = unit_rows(np.asarray(arr[lo : lo + BATCH_ROWS], dtype=np.float32))  # (b, D)
            ids = np.arange(start + lo, start + lo + len(vec), dtype=np.int64)  # (b,)
            flat = pa.array(vec.reshape(-1))  # (b·D,)
            yield pa.record_batch(
                [
                    pa.array(ids),
                    pa.array(ids + 1),
                    pa.array(shards.texts(ids)),
                    pa.FixedSizeListArray.from_arrays(flat, shards.dim),
                ],
                schema=table_schema,
            )


def _probe(shards: ShardSet, seed: int, n: int) -> Any:
    """Tuning queries: ``n`` sampled rows searched in place (each left out of its own result)."""
    from sentcl.index import tuning

    rows = tuning.held_out_rows(shards.rows, n, seed)  # (H,)
    queries = unit_rows(np.asarray(shards.gather(rows), dtype=np.float32))  # (H, D)
    known = tuning.truth(shards, queries, None, own=rows)  # each row left out of its own result
    source = f"{len(rows)} corpus rows searched in the store, each left out of its own result"
    return tuning.Probe(queries, rows, known.pop("exact"), source, **known)


def _write(db: Any, location: str, table_schema: Any, batches: Iterator[Any]) -> Any:
    import pyarrow as pa

    reader = pa.RecordBatchReader.from_batches(table_schema, batches)
    try:
        return db.create_table(TABLE, reader, schema=table_schema, mode="overwrite")
    except (OSError, RuntimeError) as err:
        raise StoreError(f"{location}: the store cannot be written ({first_line(err)})") from None


def build_store(
    embeddings: str | Path | ShardSet,
    location: str | Path,
    target_recall: float | None = 0.95,
    nlist: int | None = None,
    nprobe: int | None = None,
    seed: int = 0,
    tune_queries: int = 1000,
    kind: str = "ivf",
    graph: IndexParams | None = None,
) -> StoreIndex:
    """Write the shards into the store at ``location`` as a new published version (module doc); the store
    opened at it. ``kind``: ``ivf`` or ``hnsw`` (``graph``: its M, efConstruction and efSearch; sentcl's
    faiss defaults). ``nprobe`` (ivf), ``graph.ef_search`` (hnsw): a fixed search setting (measured, not
    tuned)."""
    from sentcl.index import tuning
    from sentcl.index.store import open_table

    if kind not in STORE_INDEXES:
        raise ValueError(f"--type {kind}: a store holds an index of type {' or '.join(STORE_INDEXES)}")
    graph = graph or IndexParams()
    shards = embeddings if isinstance(embeddings, ShardSet) else ShardSet.open(embeddings)
    location = str(location)
    if not is_uri(location):
        Path(location).mkdir(parents=True, exist_ok=True)
    db = connect(location)
    before = published_version(open_table(location)) if TABLE in _tables(db, location) else None
    shards.check_input()  # the texts are read from the encoded input
    m = shards.manifest
    partitions = nlist or default_partitions(shards.rows, kind)
    meta: dict[str, Any] = {
        **header(STORE, shards.dim, shards.rows),
        "metric": "inner_product",
        "normalized": True,
        **{k: m.get(k) for k in IDENTITY_KEYS if k in m or k in ("model", "pooler", "max_length")},
        "embeddings": str(Path(shards.folder).resolve()),
        "shards_sha256": shards_fingerprint(m),
        "index_type": STORE_INDEXES[kind],
        "params": _params(kind, partitions, nprobe, graph),
        "seed": seed,
        "build_id": uuid.uuid4().hex,
    }
    start = time.perf_counter()
    table = _write(db, location, schema(shards.dim, meta), row_batches(shards, schema(shards.dim, meta)))
    ours = [int(table.version)]
    _index(table, location, kind, meta["params"])
    ours.append(int(table.version))
    meta["build_seconds"] = round(time.perf_counter() - start, 3)
    store = StoreIndex(location, table, meta)
    if target_recall is not None:
        fixed = {"nprobe": nprobe, "ef_search": graph.ef_search}[KNOB[kind]]
        explicit = {KNOB[kind]: fixed} if fixed else {}
        probe = _probe(shards, seed, tune_queries)
        meta["tuning"] = tuning.tune(store, kind, meta["params"], probe, target_recall, explicit)
        meta["params"] = {**meta["params"], **meta["tuning"]["setting"]}
    try:
        table.to_lance().update_schema_metadata({META_KEY.decode(): json.dumps(meta)}, replace=True)
        table.checkout_latest()
    except (OSError, RuntimeError) as err:
        raise StoreError(f"{location}: the build's metadata cannot be written ({first_line(err)})") from None
    ours.append(int(table.version))
    _publish(table, location, before, ours, meta["build_id"])
    return StoreIndex(location, table, version_meta(table, location))


def _tables(db: Any, location: str) -> list[str]:
    try:
        listed = db.list_tables()
    except (OSError, RuntimeError, ValueError) as err:
        raise StoreError(
            f"{location}: the store cannot be reached ({first_line(err)}); check the location and the AWS_* "
            "settings"
        ) from None
    return list(getattr(listed, "tables", listed))


def _index(table: Any, location: str, kind: str, params: dict[str, int]) -> None:
    from lancedb.index import HnswSq, IvfFlat

    if kind == "hnsw":
        config: Any = HnswSq(distance_type="dot", num_partitions=params["nlist"], m=params["hnsw_m"],
                             ef_construction=params["ef_construction"])  # fmt: skip
    else:
        config = IvfFlat(distance_type="dot", num_partitions=params["nlist"])
    try:
        table.create_index("vector", config=config)
    except (OSError, RuntimeError, ValueError) as err:
        raise StoreError(
            f"{location}: the vector index could not be committed ({first_line(err)}); another build may have "
            "written the store at the same time: nothing of this build is published"
        ) from None


def _publish(table: Any, location: str, before: int | None, ours: list[int], build_id: str) -> None:
    """Move the tag to this build's last version, unless another build published since this one began or
    the version is not this build's whole (then refused: the store keeps answering from the winner)."""
    if table.version != ours[-1] or ours != list(range(ours[0], ours[0] + len(ours))):
        raise StoreError(
            f"{location}: another build wrote the store while this one ran (this build's versions "
            f"{ours}); nothing of this build is published: run it again when the other has finished"
        )
    if (
        version_meta(table, location).get("build_id") != build_id
        or table.count_rows() != json.loads(table.schema.metadata[META_KEY])["count"]
    ):
        raise StoreError(f"{location}: version {table.version} is not this build's whole; nothing published")
    now = published_version(table)
    if now != before:
        raise StoreError(
            f"{location}: another build published version {now} while this one ran; this build's version "
            f"{ours[-1]} is not published (the store answers from {now})"
        )
    if now is None:
        table.tags.create(TAG, ours[-1])
    else:
        table.tags.update(TAG, ours[-1])
    logger.info("%s: published version %d", location, ours[-1])
