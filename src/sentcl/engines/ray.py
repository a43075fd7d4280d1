"""The Ray Data engine: sentcl's encoder in an actor pool (``map_batches`` with a callable class, so each actor
opens the model once), on a local Ray (``ray.init()`` on this machine) or on a cluster (``address``).

``embed_dataset(ds, model)`` is the entry for a user who holds a Ray Dataset: the dataset with an embedding
column added, lazily. ``RayEngine.encode_shards`` writes the shard format of ``sentcl.data.shards`` (the same
manifest, hashes and resume rules; shards are written by this process as their rows come back in order), so
``sentcl index build``, ``search`` and ``mine`` read its output as they read the in-process encode's.

Each actor takes ``cpus_per_actor`` CPUs (its torch threads), or one GPU where the cluster has GPUs (one actor
a GPU). A local Ray is started with a bounded object store and no dashboard, and shut down by ``close``; a Ray
that was already running in the process is used and left running. An ``address`` that no Ray answers is one
clear error within ``CONNECT_TIMEOUT_S``.
"""

from __future__ import annotations

import logging
import socket
import time
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.data.shard_resume import SETTINGS_KEYS, check_resume, finished, shard_stem
from sentcl.data.shards import ENCODE_CHUNK, _header, iter_line_chunks, read_manifest, write_manifest
from sentcl.engines import EncodeSettings, ModelSpec
from sentcl.engines.sources import Source, stage
from sentcl.files.atomic import atomic_save_npy, atomic_write_json
from sentcl.files.fingerprint import array_sha256, fields_sha256, file_records
from sentcl.files.output import Input, model_input, prepare_folder

logger = logging.getLogger(__name__)
CONNECT_TIMEOUT_S = 5.0
LOCAL_OBJECT_STORE_BYTES = 512 * 1024**2  # a local Ray's shared memory (it spills to disk beyond)
DEFAULT_RAY_PORT = 6379
CLIENT_PORT = 10001  # ray://host without a port
# the fewest rows a block of the pipeline holds: a block is what one actor encodes in a call
MIN_ROWS_PER_CALL = 64


def block_rows(total: int, actors: int) -> int:
    """Rows a block (one actor call): the in-process encode's chunk (``ENCODE_CHUNK``; the encoder sorts a call's
    rows by length, so longer calls pad less: ``python -m bench.ray_encode --padding``), fewer where the input
    would otherwise leave an actor of the pool without a block."""
    return max(MIN_ROWS_PER_CALL, min(ENCODE_CHUNK, -(-total // max(1, actors))))


class EncodeBatch:
    """Ray Data's callable class: the encoder, opened once per actor; a batch's texts in, vectors out."""

    def __init__(self, spec: ModelSpec, settings: EncodeSettings, text_column: str, output_column: str,
                 threads: int | None) -> None:  # fmt: skip
        import torch

        if threads:
            torch.set_num_threads(threads)
        self.model = spec.open(threads=threads)
        if torch.cuda.is_available() and hasattr(self.model, "to"):
            self.model.to("cuda")
        self.settings, self.text_column, self.output_column = settings, text_column, output_column

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        texts = [str(t) for t in batch[self.text_column]]
        vectors = self.model.encode(
            texts,
            batch_size=self.settings.batch_size,
            normalize=self.settings.normalize,
            show_progress=False,
            max_length=self.settings.max_length,
        )
        return {**batch, self.output_column: np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)}


def _pool_options(cpus_per_actor: int, actors: int | None) -> dict[str, Any]:
    """map_batches' resources: one GPU an actor where the cluster has GPUs, else ``cpus_per_actor`` CPUs."""
    import ray
    from ray.data import ActorPoolStrategy

    size = pool_size(cpus_per_actor, actors)
    if int(ray.cluster_resources().get("GPU", 0)):
        return {"num_gpus": 1, "compute": ActorPoolStrategy(size=size), "threads": None}
    return {"num_cpus": cpus_per_actor, "compute": ActorPoolStrategy(size=size), "threads": cpus_per_actor}


def pool_size(cpus_per_actor: int, actors: int | None) -> int:
    """The actors of the pool: ``actors``, else one a GPU where the cluster has GPUs, else one per
    ``cpus_per_actor`` of its CPUs."""
    import ray

    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    return actors or gpus or max(1, int(resources.get("CPU", 1)) // cpus_per_actor)


def embed_dataset(
    ds: Any,
    model: str | ModelSpec,
    *,
    text_column: str = "text",
    output_column: str = "embedding",
    batch_size: int = 128,
    max_length: int | None = None,
    normalize: bool = False,
    rows_per_call: int = ENCODE_CHUNK,
    cpus_per_actor: int = 1,
    actors: int | None = None,
) -> Any:
    """``ds`` (a Ray Dataset with a string column ``text_column``) with ``output_column`` added: (D,) float32
    a row, the vectors of ``open_model(model)``. Lazy, like every Ray Data transform; Ray must be running."""
    spec = model if isinstance(model, ModelSpec) else ModelSpec(model)
    if text_column not in ds.columns():
        raise ValueError(f"the dataset has no column {text_column!r} (columns: {', '.join(ds.columns())})")
    pool = _pool_options(cpus_per_actor, actors)
    threads = pool.pop("threads")
    return ds.map_batches(
        EncodeBatch,
        fn_constructor_kwargs={
            "spec": spec,
            "settings": EncodeSettings(batch_size, max_length, normalize),
            "text_column": text_column,
            "output_column": output_column,
            "threads": threads,
        },
        batch_size=rows_per_call,
        batch_format="numpy",
        **pool,
    )


def check_reachable(
    address: str, timeout_s: float = CONNECT_TIMEOUT_S, option: str = "--ray-address"
) -> None:
    """Raise one clear line (naming ``option``, where the address came from) unless something accepts a
    connection at the Ray address (``host:port`` or ``ray://host[:port]``), within ``timeout_s``: ``ray.init``
    itself retries for a minute or more."""
    if address in ("auto", "local"):
        return
    client = address.startswith("ray://")
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        host, port = address.removeprefix("ray://"), str(CLIENT_PORT if client else DEFAULT_RAY_PORT)
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            pass
    except OSError as err:
        reason = "no answer" if isinstance(err, TimeoutError) else (err.strerror or str(err))
        raise ValueError(
            f"{option} {address}: no Ray cluster answers at {host}:{port} ({reason} within "
            f"{timeout_s:g}s); start one with `ray start --head`, or leave out {option} for a local Ray"
        ) from None


class RayEngine:
    def __init__(
        self, address: str | None = None, cpus_per_actor: int = 1, actors: int | None = None
    ) -> None:
        import ray

        if address is not None:
            check_reachable(address)
        self.started = False
        if not ray.is_initialized():
            # a local Ray binds to the loopback address only: nothing of it listens on the machine's network
            local = (
                {}
                if address
                else {"object_store_memory": LOCAL_OBJECT_STORE_BYTES, "_node_ip_address": "127.0.0.1"}
            )
            try:
                ray.init(address=address, include_dashboard=False, log_to_driver=False, **local)
            # another service at the port, a version mismatch; Ray raises a bare Exception when its node does
            # not come up in time (an overloaded machine)
            except Exception as err:  # noqa: BLE001
                where = f"--ray-address {address}" if address else "a local Ray"
                raise ValueError(f"{where}: Ray did not start: {str(err).strip().splitlines()[0]}") from None
            self.started = True
        ctx = ray.data.DataContext.get_current()
        self._saved = (ctx.execution_options.preserve_order, ctx.enable_progress_bars)  # restored by close
        ctx.execution_options.preserve_order = True  # rows come back in input order: shards finish in turn
        ctx.enable_progress_bars = False
        self.cpus_per_actor, self.actors = cpus_per_actor, actors

    def _embed(self, ds: Any, settings: EncodeSettings, spec: ModelSpec, per_call: int) -> Any:
        return embed_dataset(
            ds,
            spec,
            rows_per_call=per_call,
            batch_size=settings.batch_size,
            max_length=settings.max_length,
            normalize=settings.normalize,
            cpus_per_actor=self.cpus_per_actor,
            actors=self.actors,
        )

    def encode(self, spec: ModelSpec, texts: list[str], settings: EncodeSettings) -> np.ndarray:
        import ray

        rows = [{"row": i, "text": t} for i, t in enumerate(texts)]
        per_call = block_rows(len(rows), pool_size(self.cpus_per_actor, self.actors))
        ds = ray.data.from_items(rows, override_num_blocks=max(1, -(-len(rows) // per_call)))
        vectors = self._embed(ds, settings, spec, per_call).drop_columns(["text"])
        parts = list(vectors.iter_batches(batch_size=None, batch_format="numpy"))
        rows = np.concatenate([b["row"] for b in parts])  # (N,)
        out = np.concatenate([b["embedding"] for b in parts])  # (N, D)
        if not np.array_equal(rows, np.arange(len(texts))):
            raise RuntimeError("the Ray pipeline returned rows out of order")
        return out

    def encode_shards(
        self, spec: ModelSpec, source: Source, out_dir: Path, shard_size: int, settings: EncodeSettings
    ) -> dict[str, Any]:
        """The shards of ``source`` under ``out_dir``, as ``sentcl.data.shards.encode_shards`` writes them
        (a source other than a local text file is staged there first: ``sentcl.engines.sources``); the
        finished shards of an earlier run of the same encode are kept, the rest encoded."""
        import ray

        given = [] if source.remote else [Input(Path(source.uri), "--input")]
        prepare_folder(out_dir, "shards", "--output", [*given, *model_input(spec.model)])
        input_path = Path(source.uri) if source.local_text else stage(source, out_dir)
        header = _header(spec.open(), input_path, out_dir, shard_size, spec.model, settings.max_length,
                         settings.normalize)  # fmt: skip
        total = -(-header["total_lines"] // shard_size)
        check_resume(out_dir, header, total)
        missing = {i for i in range(total) if finished(out_dir, i) is None}
        if len(missing) < total:
            logger.info("%s: %d finished shard(s) kept (resume)", out_dir, total - len(missing))
        write_manifest(out_dir, header, total)
        if not missing:
            return read_manifest(out_dir)
        todo = sum(_shard_rows(header, shard_size, i) for i in missing)
        per_call = block_rows(todo, pool_size(self.cpus_per_actor, self.actors))
        refs = [  # each shard cut into blocks of per_call rows
            ray.put(_shard_table(i, texts[at : at + per_call], offsets[at : at + per_call]))
            for i, _, texts, offsets in iter_line_chunks(input_path, shard_size, missing)
            for at in range(0, len(texts), per_call)
        ]
        firsts = {i: i * shard_size + 1 for i in missing}
        rows = self._embed(ray.data.from_arrow_refs(refs), settings, spec, per_call).drop_columns(["text"])
        pending: dict[int, list[dict[str, np.ndarray]]] = {}
        start = time.perf_counter()
        for batch in rows.iter_batches(batch_size=None, batch_format="numpy"):
            for i in np.unique(batch["shard"]):
                pick = batch["shard"] == i
                pending.setdefault(int(i), []).append({k: batch[k][pick] for k in ("offset", "embedding")})
                have = sum(len(p["offset"]) for p in pending[int(i)])
                if have == _shard_rows(header, shard_size, int(i)):
                    parts = pending.pop(int(i))
                    emb = np.concatenate([p["embedding"] for p in parts])  # (rows, D)
                    offsets = np.concatenate([p["offset"] for p in parts])  # (rows,)
                    _write_shard(out_dir, header, int(i), firsts[int(i)], emb, offsets)
                    write_manifest(out_dir, header, total)
                    logger.info("shard %d/%d written (%.1fs)", int(i) + 1, total, time.perf_counter() - start)
        if pending:
            raise RuntimeError(f"the Ray pipeline left shard(s) {sorted(pending)} incomplete")
        return write_manifest(out_dir, header, total)

    def close(self) -> None:
        import ray

        ctx = ray.data.DataContext.get_current()
        ctx.execution_options.preserve_order, ctx.enable_progress_bars = self._saved
        if self.started and ray.is_initialized():
            ray.shutdown()
        self.started = False


def _shard_rows(header: dict[str, Any], shard_size: int, i: int) -> int:
    """Rows of shard i: ``shard_size``, fewer for the last shard."""
    return min(shard_size, header["total_lines"] - i * shard_size)


def _shard_table(i: int, texts: list[str], offsets: np.ndarray) -> Any:
    """Shard i's rows as an Arrow table: its index, each line's byte offset and text."""
    import pyarrow as pa

    return pa.table({"shard": np.full(len(texts), i, dtype=np.int64), "offset": offsets, "text": texts})


def _write_shard(
    out_dir: Path, header: dict[str, Any], i: int, first: int, emb: np.ndarray, offsets: np.ndarray
) -> None:
    """Shard i's arrays, then its record (last: a shard counts as finished only with it), the records
    ``sentcl.data.shards.encode_shards`` writes."""
    if emb.shape != (len(offsets), header["dim"]) or not np.isfinite(emb).all():
        raise ValueError(
            f"the model produced {emb.shape} or non-finite embeddings for lines {first}..{first + len(offsets) - 1}"
        )
    stem = shard_stem(i)
    atomic_save_npy(out_dir / f"{stem}.npy", np.ascontiguousarray(emb, dtype=np.float32))
    atomic_save_npy(out_dir / f"{stem}.offsets.npy", np.ascontiguousarray(offsets, dtype=np.int64))
    record = {
        "index": i,
        "file": f"{stem}.npy",
        "offsets": f"{stem}.offsets.npy",
        "start_line": first,
        "end_line": first + len(offsets) - 1,
        "rows": len(offsets),
        "offsets_sha256": array_sha256(np.asarray(offsets, dtype=np.int64)),
        "input_sha256": header["input_fingerprint"]["sha256"],
        "settings_sha256": fields_sha256(header, SETTINGS_KEYS),
        "settings": {k: header[k] for k in SETTINGS_KEYS},
        "files": file_records(out_dir, (f"{stem}.npy", f"{stem}.offsets.npy")),
        "rank": 0,
        "engine": "ray",
    }
    atomic_write_json(out_dir / f"{stem}.json", record)
