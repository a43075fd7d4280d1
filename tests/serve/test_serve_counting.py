"""Counting tokens on arrival: a group of at most ``INLINE_COUNT_CHARS`` characters is tokenised on the event
loop with its own tokenizer, a longer one in the counting thread. Generated requests of both kinds, run
concurrently on one loop, each get exactly the ids the model's tokenizer gives when called directly, with and
without the model's length, and only the long groups reach the counting thread."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sentcl.serve.limits import Limits
from sentcl.serve.service import Service
from sentcl.serve.text import COUNT_CHUNK_CHARS, INLINE_COUNT_CHARS, chunks

WORDS = ["a", "dog", "runs", "über", "naïve", "the", "quickly", "cat", "!", "42", "ß", "东京"]

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=60).map(" ".join)
small = st.lists(texts, min_size=1, max_size=8)  # mostly under INLINE_COUNT_CHARS
# texts repeated until they pass INLINE_COUNT_CHARS (and up to twice the counting thread's chunk)
large = st.tuples(st.lists(texts, min_size=1, max_size=6), st.integers(1, 2 * COUNT_CHUNK_CHARS)).map(
    lambda t: t[0] * -(-max(t[1], INLINE_COUNT_CHARS + 1) // sum(map(len, t[0])))
)


def service_over(encoder: Any) -> tuple[Service, list[int]]:
    """A service over ``encoder`` whose counting thread records the characters of every group it gets."""
    service = Service(Limits(), None, {}, None)
    service.set_encoder(encoder)
    threaded: list[int] = []
    count = service._token_ids

    def recorded(group: list[str], limit: int | None, tokenizer: Any = None) -> list[list[int]]:
        if tokenizer is None:  # the counting thread's call
            threaded.append(sum(map(len, group)))
        return count(group, limit, tokenizer)

    service._token_ids = recorded  # type: ignore[method-assign]
    return service, threaded


@settings(max_examples=40, deadline=None)
@given(st.lists(small, min_size=1, max_size=6), st.lists(large, min_size=1, max_size=2), st.randoms())
def test_concurrent_counts_equal_the_tokenizer_called_directly(
    tiny_encoder: Any, smalls: list[list[str]], larges: list[list[str]], rng: Any
) -> None:
    batch = smalls + larges
    rng.shuffle(batch)
    limit = rng.choice([None, 8, 64])
    service, threaded = service_over(tiny_encoder)
    reference = copy.deepcopy(tiny_encoder.tokenizer)
    cut = {"truncation": True, "max_length": limit} if limit else {"truncation": False}

    async def run() -> list[list[list[int]]]:
        return list(await asyncio.gather(*(service.token_ids(texts, limit) for texts in batch)))

    try:
        got = asyncio.run(run())
    finally:
        service._count_executor.shutdown(wait=True)
    for texts, ids in zip(batch, got, strict=True):
        assert ids == reference(texts, **cut)["input_ids"]
    assert sum(map(len, larges[0])) > INLINE_COUNT_CHARS
    long = sorted(
        size
        for texts in batch
        for group in chunks(texts)
        if (size := sum(map(len, group))) > INLINE_COUNT_CHARS
    )
    assert sorted(threaded) == long  # every long group in the thread, no short one


def test_an_uncopyable_tokenizer_counts_in_the_encode_thread(tiny_encoder: Any) -> None:
    """Where the tokenizer cannot be copied, nothing is tokenised on the loop: every group goes to the encode
    thread, which holds the one tokenizer in turn."""

    class Uncopyable:
        def __init__(self, tokenizer: Any) -> None:
            self._tokenizer = tokenizer

        def __deepcopy__(self, memo: dict[int, Any]) -> Any:
            raise TypeError("no copies")

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return self._tokenizer(*args, **kwargs)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._tokenizer, name)

    encoder = copy.copy(tiny_encoder)
    encoder.tokenizer = Uncopyable(tiny_encoder.tokenizer)
    service = Service(Limits(), None, {}, None)
    service.set_encoder(encoder)
    assert service._loop_tokenizer is None and service._count_tokenizer is None
    submitted: list[Any] = []
    submit = service.batcher.executor.submit
    service.batcher.executor.submit = lambda fn, *a: submitted.append(fn) or submit(fn, *a)  # type: ignore[method-assign]
    try:
        ids = asyncio.run(service.token_ids(["a dog runs"]))
    finally:
        service.batcher.executor.shutdown(wait=True)
        service._count_executor.shutdown(wait=True)
    assert ids == tiny_encoder.tokenizer(["a dog runs"])["input_ids"] and len(submitted) == 1
