"""Micro-batching: concurrent requests are gathered into one ``encode`` call.

A request's sentences wait in a queue. The worker takes the oldest request and adds the following ones
while the batch stays within ``max_batch_size`` sentences and ``max_batch_tokens`` tokens, waiting at most
``max_wait_s`` after the oldest request arrived (requests that queued during the previous encode are
therefore taken at once). Encoding runs in one worker thread, off the event loop, so that the loop keeps
answering (``/health``, queueing) while a batch encodes. A request is never split across encode calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from sentcl.serve.limits import ServiceError
from sentcl.types import EncodeFn


class QueueFull(ServiceError):
    def __init__(self, waiting: int, limit: int) -> None:
        super().__init__(
            429, "overloaded", f"the queue is full ({waiting} of {limit} sentences waiting); retry"
        )


@dataclass
class _Job:
    texts: list[str]
    tokens: int
    future: asyncio.Future[np.ndarray]
    arrived: float = field(default_factory=time.monotonic)


class MicroBatcher:
    """Gathers submitted sentence lists into batches for ``encode`` (see the module's docstring)."""

    def __init__(
        self,
        encode: EncodeFn,
        *,
        max_batch_size: int = 128,
        max_batch_tokens: int = 16384,
        max_wait_s: float = 0.005,
        max_queue: int = 1024,
        on_batch: Callable[[int, float], None] | None = None,
    ) -> None:
        self.encode = encode
        self.max_batch_size = max_batch_size
        self.max_batch_tokens = max_batch_tokens
        self.max_wait_s = max_wait_s
        self.max_queue = max_queue
        self.on_batch = on_batch  # (sentences, seconds) after every encode call
        self._jobs: deque[_Job] = deque()
        self._waiting = 0  # sentences in _jobs
        self._inflight: list[_Job] = []  # the batch being encoded
        self._wake: asyncio.Event | None = None
        self._worker: asyncio.Task[None] | None = None
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sentcl-encode")

    @property
    def depth(self) -> int:
        """Sentences waiting (not yet in an encode call)."""
        return self._waiting

    async def submit(self, texts: list[str], tokens: int) -> np.ndarray:
        """The embeddings (len(texts), D) of ``texts``; raises QueueFull when the queue has no room."""
        if self._waiting + len(texts) > self.max_queue:
            raise QueueFull(self._waiting, self.max_queue)
        self._ensure_worker()
        job = _Job(texts, tokens, asyncio.get_running_loop().create_future())
        self._jobs.append(job)
        self._waiting += len(texts)
        assert self._wake is not None
        self._wake.set()
        return await job.future

    def _ensure_worker(self) -> None:
        if self._worker is None or self._worker.done():
            self._wake = asyncio.Event()
            self._worker = asyncio.get_running_loop().create_task(self._run(), name="sentcl-batcher")

    async def close(self) -> None:
        pending = [*self._inflight, *self._jobs]  # cancelling the worker clears _inflight
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        for job in pending:
            if not job.future.done():
                job.future.set_exception(ServiceError(503, "unavailable", "the service is shutting down"))
        self._jobs.clear()
        self._inflight = []
        self._waiting = 0
        self.executor.shutdown(wait=False, cancel_futures=True)

    def _take(self) -> _Job:
        job = self._jobs.popleft()
        self._waiting -= len(job.texts)
        return job

    async def _gather(self) -> list[_Job]:
        """The next batch: the oldest job plus those that fit, waiting until the oldest's deadline."""
        assert self._wake is not None
        while not self._jobs:
            self._wake.clear()
            await self._wake.wait()
        batch = [self._take()]
        size, tokens = len(batch[0].texts), batch[0].tokens
        deadline = batch[0].arrived + self.max_wait_s
        while size < self.max_batch_size and tokens < self.max_batch_tokens:
            if not self._jobs:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), remaining)
                except TimeoutError:
                    break
                continue
            nxt = self._jobs[0]
            if size + len(nxt.texts) > self.max_batch_size or tokens + nxt.tokens > self.max_batch_tokens:
                break  # it opens the next batch
            batch.append(self._take())
            size, tokens = size + len(nxt.texts), tokens + nxt.tokens
        return batch

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [job for job in await self._gather() if not job.future.done()]  # done: client gone
            if not batch:
                continue
            texts = [t for job in batch for t in job.texts]
            start = time.perf_counter()
            self._inflight = batch
            try:
                emb = await loop.run_in_executor(self.executor, self.encode, texts)  # (N, D)
            except Exception as err:  # noqa: BLE001 - every waiting request gets the failure
                failure = ServiceError(500, "backend", f"encoding failed: {type(err).__name__}: {err}")
                for job in batch:
                    if not job.future.done():
                        job.future.set_exception(failure)
                continue
            finally:
                self._inflight = []
            if self.on_batch is not None:
                self.on_batch(len(texts), time.perf_counter() - start)
            offset = 0
            for job in batch:
                rows = emb[offset : offset + len(job.texts)]  # (n_job, D)
                offset += len(job.texts)
                if not job.future.done():
                    job.future.set_result(rows)
