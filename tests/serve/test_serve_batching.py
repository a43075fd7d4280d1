"""Continuous batching: the pass a free worker takes (the rule's pass around the oldest waiting sentence,
against a brute-force reading of the rule), and through a real uvicorn: a request answered as soon as its own
sentences are encoded, concurrent requests each equal to encoding their sentences alone, a failing pass
failing only its requests; and shutdown failing what waits with 503."""

from __future__ import annotations

import asyncio
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np
import pytest
from helpers.data import VERY_MIXED_LENGTH_SENTENCES
from helpers.passes import brute_force
from hypothesis import given, settings
from hypothesis import strategies as st
from serve_helpers import SteppedEncoder, running_server, unit, wait_for

from sentcl.serve.app import create_app
from sentcl.serve.batching import MicroBatcher, _Item, _Job, next_pass
from sentcl.serve.limits import Limits, ServiceError

LONG = VERY_MIXED_LENGTH_SENTENCES[1]  # 31 tokens: no short sentence shares its pass


def alone(encoder: Any, sentences: list[str]) -> np.ndarray:
    return unit(np.stack([encoder.encode([s])[0] for s in sentences]))  # (n, D), each encoded alone


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 64), min_size=1, max_size=40),
    st.randoms(use_true_random=False),
    st.integers(1, 16),
    st.integers(1, 1000),
    st.sampled_from([0.0, 0.25, 1.0]),
)
def test_next_pass_is_the_rules_pass_around_the_oldest(
    lengths: list[int], rng: random.Random, batch: int, cells: int, padding: float
) -> None:
    seqs = rng.sample(range(1000), len(lengths))  # arrival order, unrelated to length
    job = _Job(["x"] * len(lengths), future=None, left=len(lengths))  # type: ignore[arg-type]
    pool = [_Item(job, i, n, seq) for i, (n, seq) in enumerate(zip(lengths, seqs, strict=True))]
    ranked = sorted(pool, key=lambda item: (-item.length, item.seq))  # longest first, then first come
    oldest = ranked.index(min(pool, key=lambda item: item.seq))
    spans = brute_force([item.length for item in ranked], batch, cells, padding)
    start, end = next((a, b) for a, b in spans if a <= oldest < b)
    assert next_pass(pool, batch, cells, padding) == ranked[start:end]


def test_a_request_is_answered_when_its_own_sentences_are(tiny_encoder: Any) -> None:
    """One worker, each pass released by the test. R1 = [short, LONG] and R2 = [short] wait together: the
    pass of the two short sentences answers R2 while R1 still waits for LONG's pass."""
    stepped = SteppedEncoder(tiny_encoder)
    app = create_app(stepped, limits=Limits(workers=1, max_wait_ms=1))
    r1, r2 = ["a cat", LONG], ["the dog"]
    with (
        running_server(app) as url,
        httpx.Client(base_url=url, timeout=20) as http,
        ThreadPoolExecutor(3) as pool,
    ):
        warm = pool.submit(http.post, "/embed", json={"inputs": ["warm"]})
        wait_for(lambda: len(stepped.calls) == 1, 10, "the first pass")
        first = pool.submit(http.post, "/embed", json={"inputs": r1})
        wait_for(lambda: app.state.service.batcher.depth == 2, 10, "R1 to queue")
        second = pool.submit(http.post, "/embed", json={"inputs": r2})
        wait_for(lambda: app.state.service.batcher.depth == 3, 10, "R2 to queue")
        stepped.step()  # the warm-up pass
        wait_for(lambda: len(stepped.calls) == 2, 10, "the second pass")
        stepped.step()
        answer2 = second.result(timeout=10)
        assert not first.done()  # R1's LONG is not encoded yet
        stepped.step()
        answer1, warmed = first.result(timeout=10), warm.result(timeout=10)
    assert stepped.calls == [["warm"], ["a cat", "the dog"], [LONG]]
    assert [a.status_code for a in (warmed, answer1, answer2)] == [200] * 3
    np.testing.assert_allclose(answer1.json(), alone(tiny_encoder, r1), atol=1e-5)
    np.testing.assert_allclose(answer2.json(), alone(tiny_encoder, r2), atol=1e-5)


def test_concurrent_requests_equal_each_sentence_alone(tiny_encoder: Any) -> None:
    """Two workers, 40 requests of 1-6 sentences of mixed lengths from 8 client threads: every answer is its
    own sentences, each encoded alone, in its order (the service's packed forward on the counted ids)."""
    rng = random.Random(0)
    words = "the a dog cat runs sits market bank falls red garden river child reads".split()
    texts = [
        *VERY_MIXED_LENGTH_SENTENCES,
        *(" ".join(rng.choices(words, k=rng.randint(1, 30))) for _ in range(40)),
    ]
    requests = [rng.sample(texts, rng.randint(1, 6)) for _ in range(40)]
    app = create_app(tiny_encoder, limits=Limits(workers=2, encode_batch_size=4))
    assert app.state.service._packed  # the path under test: ids counted once, the packed forward
    with (
        running_server(app) as url,
        httpx.Client(base_url=url, timeout=30) as http,
        ThreadPoolExecutor(8) as pool,
    ):
        answers = list(pool.map(lambda r: http.post("/embed", json={"inputs": r}), requests))
        metrics = http.get("/metrics").text
    for request, answer in zip(requests, answers, strict=True):
        assert answer.status_code == 200
        np.testing.assert_allclose(answer.json(), alone(tiny_encoder, request), atol=1e-5)
    passes = next(line for line in metrics.splitlines() if line.startswith("sentcl_batch_sentences_count"))
    assert float(passes.split()[-1]) >= sum(map(len, requests)) / 4  # passes of at most 4 sentences


def test_a_failing_pass_fails_only_its_requests(tiny_encoder: Any) -> None:
    stepped = SteppedEncoder(tiny_encoder, fail_on="boom")
    app = create_app(stepped, limits=Limits(workers=1, max_wait_ms=1))
    bad, good = [f"boom {LONG}"], ["a cat"]
    with (
        running_server(app) as url,
        httpx.Client(base_url=url, timeout=20) as http,
        ThreadPoolExecutor(3) as pool,
    ):
        warm = pool.submit(http.post, "/embed", json={"inputs": ["warm"]})
        wait_for(lambda: len(stepped.calls) == 1, 10, "the first pass")
        failing = pool.submit(http.post, "/embed", json={"inputs": bad})
        wait_for(lambda: app.state.service.batcher.depth == 1, 10, "the failing request to queue")
        served = pool.submit(http.post, "/embed", json={"inputs": good})
        wait_for(lambda: app.state.service.batcher.depth == 2, 10, "the good request to queue")
        stepped.step(3)
        answers = [f.result(timeout=10) for f in (warm, failing, served)]
    assert [a.status_code for a in answers] == [200, 500, 200]
    assert answers[1].json() == {
        "error": "encoding failed: RuntimeError: cannot encode 'boom'",
        "error_type": "backend",
    }
    np.testing.assert_allclose(answers[2].json(), alone(tiny_encoder, good), atol=1e-5)


def test_close_fails_waiting_and_encoding_requests_with_503() -> None:
    """Shutdown while one pass encodes and another request waits: both get 503, none hangs."""
    release = threading.Event()

    def encode(inputs: list[Any]) -> np.ndarray:
        release.wait(10)
        return np.zeros((len(inputs), 3), dtype=np.float32)

    async def scenario() -> list[BaseException | np.ndarray]:
        batcher = MicroBatcher(encode, workers=1, max_batch_size=1, max_wait_s=0.001)
        tasks = [asyncio.ensure_future(batcher.submit([text], [3])) for text in ("a", "b")]
        while batcher.depth != 1:  # "a" is encoding, "b" waits
            await asyncio.sleep(0.01)
        await batcher.close()
        release.set()
        return await asyncio.gather(*tasks, return_exceptions=True)

    results = asyncio.run(asyncio.wait_for(scenario(), 20))
    assert all(isinstance(r, ServiceError) and r.status == 503 for r in results), results


def test_queue_limit_counts_waiting_sentences() -> None:
    async def scenario() -> None:
        hold = asyncio.Event()
        batcher = MicroBatcher(lambda xs: np.zeros((len(xs), 2)), workers=1, max_queue=3, max_wait_s=10)
        first = asyncio.ensure_future(batcher.submit(["a", "b"], [3, 3]))
        await asyncio.sleep(0.05)  # waiting for a full pass (16) or 10 s: the two wait in the pool
        assert batcher.depth == 2
        with pytest.raises(ServiceError, match="the queue is full") as err:
            await batcher.submit(["c", "d"], [3, 3])
        assert err.value.status == 429
        hold.set()
        await batcher.close()
        with pytest.raises(ServiceError):
            await first

    asyncio.run(asyncio.wait_for(scenario(), 20))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 4), st.integers(1, 16))
def test_a_small_pool_is_shared_by_the_free_workers(n: int, workers: int, batch: int) -> None:
    """n sentences arrive at once while every worker is free: the first pass of each worker holds at most its
    share of the pool, ceil(n / workers) (and at most the batch size), the free workers encode at the same
    time (each pass waits, up to 10 s, until every pass of the first round has started), and every sentence
    is answered once with its own row."""
    first_round = min(workers, -(-n // min(batch, -(-n // workers))))  # passes the free workers take at once
    started = threading.Barrier(first_round, timeout=10)
    sizes: list[int] = []
    lock = threading.Lock()

    def encode(inputs: list[Any]) -> np.ndarray:
        with lock:
            sizes.append(len(inputs))
            first = len(sizes) <= first_round
        if first:
            started.wait()  # BrokenBarrierError (a failed pass) if the first round did not run in parallel
        return np.array([[float(x)] for x in inputs], dtype=np.float32)  # (n, 1): each input's own number

    async def scenario() -> np.ndarray:
        batcher = MicroBatcher(encode, workers=workers, max_batch_size=batch, max_wait_s=0.001)
        batcher._ensure_workers()
        while batcher._free != workers:  # every worker waits for work
            await asyncio.sleep(0.001)
        try:
            return await batcher.submit(list(range(n)), [3] * n)
        finally:
            await batcher.close()

    rows = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert rows[:, 0].tolist() == list(range(n)) and sum(sizes) == n
    share = min(batch, -(-n // workers))
    assert max(sizes[:first_round]) <= share and len(sizes) >= -(-n // batch)


def test_under_load_a_lone_free_worker_takes_a_full_pass() -> None:
    """One worker busy, the other free: the free one is alone, so a pool of 8 is one pass of 8, not a share."""
    release = threading.Event()
    sizes: list[int] = []

    def encode(inputs: list[Any]) -> np.ndarray:
        sizes.append(len(inputs))
        if inputs == ["busy"]:
            release.wait(10)
        return np.zeros((len(inputs), 1), dtype=np.float32)

    async def scenario() -> None:
        batcher = MicroBatcher(encode, workers=2, max_batch_size=16, max_wait_s=0.001)
        busy = asyncio.ensure_future(batcher.submit(["busy"], [3]))
        while sizes != [1]:
            await asyncio.sleep(0.001)
        await batcher.submit([f"s{i}" for i in range(8)], [3] * 8)
        release.set()
        await busy
        await batcher.close()

    asyncio.run(asyncio.wait_for(scenario(), 30))
    assert sizes == [1, 8]
