"""Continuous batching: the sentences of concurrent requests wait in one pool, and each free encode worker
takes the next length-homogeneous sub-batch from it.

A request's sentences join the pool with their token counts. A free worker sorts the pool longest first, cuts
it with the rule every ``encode`` uses (``modeling.batching.plan_batches``: at most ``max_batch_size``
sentences, ``max_batch_tokens`` padded cells and ``max_padding`` of padding per pass) and encodes the pass that
holds the oldest waiting sentence, so every sentence is taken in bounded time. A request is answered as soon
as all its sentences are encoded: it never waits for a slower pass of other requests' sentences. While the
pool holds less than a full pass, a worker waits at most ``max_wait_s`` after the oldest sentence arrived.
A pool too small to fill a pass for every free worker is shared among them (each pass at most its share,
rounded up): a lone request on an idle service is encoded by every worker at once, not by one while the
others wait; under load a free worker is alone and takes a full pass.
Encoding runs in ``workers`` threads, off the event loop, which keeps answering (``/health``, queueing).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sentcl.modeling.batching import MAX_PADDING, plan_batches
from sentcl.serve.limits import ServiceError


class QueueFull(ServiceError):
    def __init__(self, waiting: int, limit: int) -> None:
        super().__init__(
            429, "overloaded", f"the queue is full ({waiting} of {limit} sentences waiting); retry"
        )


@dataclass(eq=False)
class _Job:
    """One request: its sentences, the rows encoded so far, and the future its route awaits."""

    inputs: list[Any]
    future: asyncio.Future[np.ndarray]
    left: int  # sentences not yet encoded
    rows: np.ndarray | None = None  # (n, D) once the first of its passes is back


@dataclass(eq=False)
class _Item:
    """One sentence in the pool: its request, its row there, its token count and its arrival order."""

    job: _Job
    row: int
    length: int
    seq: int
    arrived: float = field(default_factory=time.monotonic)


def next_pass(pool: list[_Item], max_sentences: int, max_cells: int, max_padding: float) -> list[_Item]:
    """The pass, cut from ``pool`` sorted longest first by ``plan_batches``, that holds its oldest sentence."""
    ranked = sorted(pool, key=lambda item: (-item.length, item.seq))
    spans = plan_batches([item.length for item in ranked], max_sentences, max_cells, max_padding)
    oldest = min(range(len(ranked)), key=lambda i: ranked[i].seq)
    start, end = next(span for span in spans if span[0] <= oldest < span[1])
    return ranked[start:end]


class MicroBatcher:
    """The pool of waiting sentences and the workers that encode it (see the module's docstring)."""

    def __init__(
        self,
        encode: Callable[[list[Any]], np.ndarray],
        *,
        workers: int = 1,
        max_batch_size: int = 16,
        max_batch_tokens: int = 4096,
        max_padding: float = MAX_PADDING,
        max_wait_s: float = 0.005,
        max_queue: int = 1024,
        on_batch: Callable[[int, float], None] | None = None,
    ) -> None:
        self.encode = encode  # a pass's inputs -> their embeddings (n, D)
        self.workers = workers
        self.max_batch_size = max_batch_size
        self.max_batch_tokens = max_batch_tokens
        self.max_padding = max_padding
        self.max_wait_s = max_wait_s
        self.max_queue = max_queue
        self.on_batch = on_batch  # (sentences, seconds) after every encode call
        self._pool: list[_Item] = []
        self._jobs: set[_Job] = set()  # every request not yet answered
        self._seq = itertools.count()
        self._free = 0  # workers in ``_take``: waiting for, or choosing, their next pass
        self._wake: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sentcl-encode")

    @property
    def depth(self) -> int:
        """Sentences waiting (not yet in an encode call)."""
        return len(self._pool)

    async def submit(self, inputs: list[Any], lengths: list[int]) -> np.ndarray:
        """The embeddings (len(inputs), D) of ``inputs`` (what ``encode`` takes; ``lengths``: their token
        counts as the model reads them); raises QueueFull when the pool has no room."""
        if len(self._pool) + len(inputs) > self.max_queue:
            raise QueueFull(len(self._pool), self.max_queue)
        self._ensure_workers()
        job = _Job(inputs, asyncio.get_running_loop().create_future(), left=len(inputs))
        self._jobs.add(job)
        job.future.add_done_callback(lambda _: self._jobs.discard(job))
        self._pool += [_Item(job, i, n, next(self._seq)) for i, n in enumerate(lengths)]
        assert self._wake is not None
        self._wake.set()
        return await job.future

    def _ensure_workers(self) -> None:
        if self._tasks and not all(task.done() for task in self._tasks):
            return
        self._wake = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._run(), name=f"sentcl-batcher-{i}") for i in range(self.workers)]

    async def close(self) -> None:
        """Stop the workers; every request not yet answered gets 503."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for job in list(self._jobs):
            if not job.future.done():
                job.future.set_exception(ServiceError(503, "unavailable", "the service is shutting down"))
        self._pool = []
        self._jobs.clear()
        self.executor.shutdown(wait=False, cancel_futures=True)

    async def _wait(self, timeout: float | None) -> bool:
        """Wait for a submit (at most ``timeout`` s); False when the time ran out."""
        assert self._wake is not None
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def _take(self) -> list[_Item]:
        """The next pass, once the pool holds a full pass or its oldest sentence has waited ``max_wait_s``: at
        most ``max_batch_size`` sentences, and at most this worker's share of the pool among the free workers.
        The pass is chosen and removed from the pool with no await between: another worker cannot take the
        same sentences (a sentence encoded twice would answer its request before its other rows are in)."""
        self._free += 1
        try:
            return await self._choose()
        finally:
            self._free -= 1

    async def _choose(self) -> list[_Item]:
        while True:
            self._pool = [item for item in self._pool if not item.job.future.done()]  # done: client gone
            if not self._pool:
                await self._wait(None)
                continue
            remaining = min(item.arrived for item in self._pool) + self.max_wait_s - time.monotonic()
            if len(self._pool) < self.max_batch_size and remaining > 0:
                await self._wait(remaining)  # a submit or the deadline: look again
                continue
            share = -(-len(self._pool) // self._free)  # ceil: every free worker gets part of a small pool
            size = min(self.max_batch_size, share)
            chosen = next_pass(self._pool, size, self.max_batch_tokens, self.max_padding)
            taken = set(map(id, chosen))
            self._pool = [item for item in self._pool if id(item) not in taken]
            return chosen

    async def _run(self) -> None:
        while True:
            items = await self._take()
            start = time.perf_counter()
            await self._encode_isolated(items)
            if self.on_batch is not None:
                self.on_batch(len(items), time.perf_counter() - start)

    async def _encode_isolated(self, items: list[_Item]) -> None:
        """Encode ``items`` in one pass; when the pass fails, its halves are tried apart (down to single
        sentences), so the failure reaches only the requests of the sentences that fail, never the other
        clients' requests batched with them."""
        loop = asyncio.get_running_loop()
        items = [item for item in items if not item.job.future.done()]
        if not items:
            return
        inputs = [item.job.inputs[item.row] for item in items]
        try:
            emb = await loop.run_in_executor(self.executor, self.encode, inputs)  # (n, D)
        except BaseException as err:  # noqa: BLE001 - a Rust panic of the tokenizer is a BaseException
            if not isinstance(err, Exception) and type(err).__name__ != "PanicException":
                raise
            if len(items) > 1:
                half = len(items) // 2
                await self._encode_isolated(items[:half])
                await self._encode_isolated(items[half:])
                return
            failure = ServiceError(500, "backend", f"encoding failed: {type(err).__name__}: {err}")
            if not items[0].job.future.done():
                items[0].job.future.set_exception(failure)
            return
        self._answer(items, emb)

    @staticmethod
    def _answer(items: list[_Item], emb: np.ndarray) -> None:
        """Write each row into its request; answer the requests whose last sentence this was."""
        for item, row in zip(items, emb, strict=True):
            job = item.job
            if job.future.done():
                continue
            if job.rows is None:
                job.rows = np.empty((len(job.inputs), emb.shape[1]), dtype=emb.dtype)  # (n, D)
            job.rows[item.row] = row
            job.left -= 1
            if not job.left:
                job.future.set_result(job.rows)
