"""A vector store (LanceDB) behind the index protocol: a local folder or ``s3://bucket/prefix``.

A store is a LanceDB database holding one table, ``vectors``: ``id`` (int64, the corpus row), ``line`` (the
input's 1-based line), ``text`` and ``vector`` (float32 (D,), unit length), with a vector index on ``vector``
(inner product): ``IVF_FLAT`` (``ivf``: searched with ``nprobe`` cells) or ``IVF_HNSW_SQ`` (``hnsw``: a graph of
8-bit scalar-quantised vectors in each cell, searched with ``ef_search``). Every build is a new version of the
table (Lance's versioned datasets); the schema's metadata of a version holds its ``index.json``
(``sentcl.index.format``'s header with type ``store``, the encoder's identity, the shards' fingerprint, the
tuned search setting, a build id). A build is *published*
by pointing the table's tag ``current`` at its last version (``sentcl.index.store_build``); readers open
the version the tag names and stay on it (``checkout``) until ``reopen`` asks for the tag again. A version
that is being written, was left by a killed build, or lost a race to another writer is never named by the
tag, so no reader sees it.

Object storage: ``s3://`` locations take their endpoint, region and keys from the standard AWS variables
(``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``, ``AWS_REGION`` or ``AWS_DEFAULT_REGION``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from sentcl.extras import extra_hint
from sentcl.files.fields import Int, Record, Text, check
from sentcl.index.faiss_params import DEFAULT_NPROBE
from sentcl.index.format import FORMAT
from sentcl.similarity import unit_rows

logger = logging.getLogger(__name__)
STORE = "store"
TABLE = "vectors"
TAG = "current"
META_KEY = b"sentcl"
#: the fields of a version's metadata that opening and searching read
META_SPEC = Record(
    {
        "format": Text((FORMAT,)),
        "type": Text((STORE,)),
        "dim": Int(1),
        "count": Int(0),
        "build_id": Text(),
        "params": Record(optional={"nprobe": Int(1), "refine": Int(1), "ef_search": Int(1)}),
    }
)
#: sentcl's index kind -> the LanceDB index a store of that kind holds
STORE_INDEXES = {"ivf": "IVF_FLAT", "hnsw": "IVF_HNSW_SQ"}
LANCE_HELP = f"lancedb is not installed: pip install lancedb, or {extra_hint('store')}"


class StoreError(ValueError):
    """A store that cannot be opened or searched: missing, unpublished, removed, or unreachable."""


def import_lancedb() -> ModuleType:
    try:
        return importlib.import_module("lancedb")
    except ImportError as err:
        raise ImportError(LANCE_HELP) from err


def is_uri(location: str | Path) -> bool:
    """Whether ``location`` names object storage (``scheme://...``) rather than a local path."""
    return "://" in str(location)


def is_store(location: str | Path) -> bool:
    """Whether ``location`` is a store: an object-storage URI, or a local folder holding ``vectors.lance``."""
    return is_uri(location) or (Path(location) / f"{TABLE}.lance").is_dir()


def storage_options(location: str | Path) -> dict[str, str]:
    """Object-store settings for ``location`` from the standard AWS variables (module doc); none for a folder."""
    if not str(location).startswith("s3://"):
        return {}
    env = os.environ
    found = {
        "aws_endpoint": env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL"),
        "aws_region": env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION"),
        "aws_access_key_id": env.get("AWS_ACCESS_KEY_ID"),
        "aws_secret_access_key": env.get("AWS_SECRET_ACCESS_KEY"),
        "aws_session_token": env.get("AWS_SESSION_TOKEN"),
    }
    out = {k: v for k, v in found.items() if v}
    if out.get("aws_endpoint", "").startswith("http://"):
        out["allow_http"] = "true"
    return out


def connect(location: str | Path) -> Any:  # noqa: ANN401 - a lancedb connection
    """A LanceDB connection to the store at ``location``."""
    lancedb = import_lancedb()
    return lancedb.connect(str(location), storage_options=storage_options(location) or None)


def first_line(err: BaseException) -> str:
    """The first line of an engine's message (Lance's carry a Rust backtrace location after it)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def published_version(table: Any) -> int | None:
    """The version the tag ``current`` names, or None when no build has been published."""
    try:
        tags = table.tags.list()
    except (OSError, RuntimeError, ValueError):
        return None
    found = tags.get(TAG)
    if found is None:
        return None
    return int(found["version"] if isinstance(found, dict) else found)


def version_meta(table: Any, where: str) -> dict[str, Any]:
    """The sentcl metadata of the table's checked-out version, checked against ``META_SPEC``."""
    raw = (table.schema.metadata or {}).get(META_KEY)
    if raw is None:
        raise StoreError(
            f"{where}: version {table.version} holds no sentcl metadata: not a store sentcl wrote"
        )
    try:
        meta = json.loads(raw)
    except json.JSONDecodeError as err:
        raise StoreError(f"{where}: version {table.version}'s sentcl metadata is not JSON ({err})") from None
    return check(
        meta, META_SPEC, f"{where} (version {table.version} metadata)", StoreError, "rebuild the store"
    )


class StoreIndex:
    """An opened store at one version: the reader's interface (``sentcl.index.reader``) plus ``version`` and
    ``reopen()`` (the newest published version, checked again)."""

    kind = STORE
    backend = "lancedb"

    def __init__(self, location: str | Path, table: Any, meta: dict[str, Any], **settings: Any) -> None:
        self.location = location
        self.folder = location  # the reader's name for where an index lives
        self.table = table
        self.meta = meta
        self.version = int(table.version)
        self.nprobe = DEFAULT_NPROBE
        self.refine = 1
        self.ef_search: int | None = None
        self.graph = meta.get("index_type") == STORE_INDEXES["hnsw"]  # ef_search applies
        self.settings = settings
        for given in (meta["params"], settings):
            self.configure(given.get("nprobe"), given.get("ef_search"), given.get("refine"))

    @property
    def dim(self) -> int:
        return int(self.meta["dim"])

    def __len__(self) -> int:
        return int(self.meta["count"])

    def check_dim(self, dim: int, model: str = "the model") -> None:
        if dim != self.dim:
            from sentcl.data.vector_identity import dim_mismatch

            raise StoreError(dim_mismatch(self.location, self.dim, self.meta, model, dim))

    def check_encoder(self, model: str, encoder: Any, max_length: int | None, allow: bool = False) -> None:
        """As ``AnnIndex.check_encoder``: the dimension always, the model's identity unless ``allow``."""
        from sentcl.data.vector_identity import check_encoder, model_identity

        self.check_dim(int(encoder.embedding_dim), f"model {model!r}")
        now = model_identity(model, encoder, max_length)
        for found in check_encoder(Path(str(self.location)), self.meta, now, allow):
            logger.warning("%s: %s (--allow-model-mismatch)", self.location, found)

    def configure(
        self, nprobe: int | None = None, ef_search: int | None = None, refine: int | None = None
    ) -> None:
        """Set the search setting (None keeps the current one): IVF cells searched, the graph's beam width
        (a ``hnsw`` store only) and the re-scoring factor."""
        if nprobe is not None:
            self.nprobe = int(nprobe)
        if ef_search is not None and self.graph:
            self.ef_search = int(ef_search)
        if refine is not None:
            if refine < 1:
                raise ValueError(f"refine must be >= 1, got {refine}")
            self.refine = int(refine)

    def check_texts(self) -> None:
        """The texts live in the store itself: nothing outside it to check."""

    def _gone(self, err: BaseException) -> StoreError:
        return StoreError(
            f"{self.location}: version {self.version} of the store can no longer be read ({first_line(err)}); "
            "it was removed or damaged: reload the service (POST /index/reload) or reopen the store"
        )

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows per query by cosine: scores (Q, k) float32 descending, ids (Q, k) int64 (-1: not found)."""
        q = np.asarray(queries, dtype=np.float32)
        if q.ndim != 2:
            raise ValueError(f"queries must be a (Q, D) array, got shape {q.shape}")
        self.check_dim(q.shape[1], "the queries")
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        k = min(k, len(self))
        q = unit_rows(q)  # (Q, D)
        scores = np.full((len(q), k), -np.inf, dtype=np.float32)  # (Q, k)
        ids = np.full((len(q), k), -1, dtype=np.int64)  # (Q, k)
        if not len(q):
            return scores, ids
        try:
            query = self.table.search(list(q) if len(q) > 1 else q[0], vector_column_name="vector")
            query = query.distance_type("dot").limit(k).nprobes(self.nprobe)
            if self.ef_search is not None:
                query = query.ef(max(self.ef_search, k * self.refine))  # Lance: ef >= the candidates asked
            if self.refine > 1 or self.graph:  # a graph's 8-bit distances re-scored: exact cosines returned
                query = query.refine_factor(self.refine)
            found = query.select(["id", "_distance"]).to_arrow()
        except (OSError, RuntimeError, ValueError) as err:
            raise self._gone(err) from None
        which = (
            found["query_index"].to_numpy()
            if "query_index" in found.column_names
            else np.zeros(found.num_rows)
        )  # (hits,) query of each hit
        rows = found["id"].to_numpy()  # (hits,)
        cos = 1.0 - found["_distance"].to_numpy()  # (hits,): Lance's dot distance is 1 - q·v
        for qi in range(len(q)):
            mine = np.flatnonzero(which == qi)
            order = mine[np.argsort(-cos[mine], kind="stable")][:k]
            scores[qi, : len(order)] = cos[order]
            ids[qi, : len(order)] = rows[order]
        return scores, ids

    def _rows(self, ids: np.ndarray | list[int], column: str) -> list[Any]:
        wanted = [int(i) for i in ids]
        if not wanted:
            return []
        if min(wanted) < 0 or max(wanted) >= len(self):
            raise IndexError(f"row ids must lie in 0..{len(self) - 1}")
        unique = sorted(set(wanted))
        try:  # row r of the table is corpus row r: the build writes them in order
            got = self.table.take_offsets(unique).select(["id", column]).to_arrow()
        except (OSError, RuntimeError, ValueError) as err:
            raise self._gone(err) from None
        by_id = dict(zip(got["id"].to_pylist(), got[column].to_pylist(), strict=True))
        return [by_id[i] for i in wanted]

    def texts(self, ids: np.ndarray | list[int]) -> list[str]:
        return self._rows(ids, "text")

    def lines(self, ids: np.ndarray | list[int]) -> list[int]:
        return [int(v) for v in self._rows(ids, "line")]

    def vectors(self, ids: np.ndarray | list[int]) -> np.ndarray:
        """The stored unit vectors of the rows: (len(ids), D) float32."""
        rows = self._rows(ids, "vector")
        return np.asarray(rows, dtype=np.float32).reshape(len(rows), self.dim)  # (n, D)

    def memory_bytes(self) -> int:
        """Not measured for a store: its pages are read from the folder or bucket as searched."""
        return 0

    def setting(self) -> dict[str, int]:
        graph = {} if self.ef_search is None else {"ef_search": self.ef_search}
        return {"nprobe": self.nprobe, **graph, "refine": self.refine}

    def summary(self) -> dict[str, Any]:
        tuned = self.meta.get("tuning") or {}
        return {
            "type": STORE,
            "size": len(self),
            "dim": self.dim,
            "version": self.version,
            "setting": self.setting(),
            "target_recall": tuned.get("target_recall"),
            "recall_at_10": tuned.get("recall_at_10"),
            "qps": tuned.get("qps"),
        }

    def reopen(self) -> StoreIndex:
        """The store at its newest published version, with this one's search setting."""
        return open_store(self.location, **self.settings)


def open_table(location: str | Path) -> Any:  # noqa: ANN401 - a LanceTable
    """The store's table at its latest version; StoreError (one line) when there is none or it is unreachable."""
    if not is_uri(location) and not Path(location).is_dir():
        raise FileNotFoundError(f"store {location} does not exist: build one with sentcl index build --store")
    try:
        return connect(location).open_table(TABLE)
    except (OSError, RuntimeError, ValueError) as err:
        raise StoreError(
            f"{location}: no store table {TABLE!r} could be opened ({first_line(err)}); build one with "
            "sentcl index build --store, or check the location and the AWS_* settings"
        ) from None


def open_store(location: str | Path, **settings: Any) -> StoreIndex:
    """Open the store at its published version (``nprobe``/``refine`` override its tuned search setting)."""
    table = open_table(location)
    version = published_version(table)
    if version is None:
        raise StoreError(
            f"{location}: no build of the store has finished (none is published): run sentcl index build "
            "--store again"
        )
    try:
        table.checkout(version)
    except (OSError, RuntimeError, ValueError) as err:
        raise StoreError(
            f"{location}: the published version {version} cannot be read ({first_line(err)}); rebuild the store"
        ) from None
    meta = version_meta(table, str(location))
    return StoreIndex(location, table, meta, **{k: v for k, v in settings.items() if v is not None})
