"""Padding-aware inference passes: ``plan_batches`` against a brute-force reading of its rule on random
length lists, and ``encode`` through it equal to the fixed-count passes it replaced and to each sentence
encoded alone."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from helpers.data import VERY_MIXED_LENGTH_SENTENCES
from helpers.passes import brute_force
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sentcl.modeling.encoder as encoder_module
from sentcl.modeling.batching import length_sorted_batches, plan_batches, token_ids


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(1, 128), max_size=60),
    st.integers(1, 20),
    st.integers(1, 3000),
    st.sampled_from([0.0, 0.1, 0.25, 1.0, 10.0]),
)
def test_plan_is_the_rule(lengths: list[int], batch_size: int, max_cells: int, max_padding: float) -> None:
    lengths = sorted(lengths, reverse=True)
    spans = plan_batches(lengths, batch_size, max_cells, max_padding)
    assert spans == brute_force(lengths, batch_size, max_cells, max_padding)


def test_named_example() -> None:
    """Ten of 20 tokens, then shorter ones: 12, 11 and two 5s join the 20s (padding 47 cells on 233 tokens,
    20%; a third 5 would make it 62 on 238, 26%), the other 5s make a pass; a cap of 20 cells leaves every
    sentence longer than 10 tokens alone and cuts the 5s in fours."""
    lengths = [20] * 10 + [12, 11, 5, 5, 5, 5, 5, 5]
    assert plan_batches(lengths, batch_size=16, max_cells=400, max_padding=0.25) == [(0, 14), (14, 18)]
    assert plan_batches(lengths, batch_size=16, max_cells=20, max_padding=0.25) == [
        *((i, i + 1) for i in range(10)),
        (10, 11),
        (11, 12),
        (12, 16),
        (16, 18),
    ]
    with pytest.raises(ValueError, match="batch_size must be positive"):
        plan_batches(lengths, 0)


def test_encode_equals_fixed_count_passes_and_each_alone(
    tiny_encoder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sentences = [*VERY_MIXED_LENGTH_SENTENCES, "a", "the dog", *VERY_MIXED_LENGTH_SENTENCES[::-1]]
    new = tiny_encoder.encode(sentences, batch_size=8)  # (N, D)
    passes = list(length_sorted_batches(tiny_encoder.tokenizer, sentences, 64, 8, "pt")[1])
    assert any(len(idx) < 8 for idx, _ in passes[:-1])  # the rule cut somewhere the fixed count would not
    fixed = functools.partial(length_sorted_batches, max_cells=10**9, max_padding=float("inf"))
    monkeypatch.setattr(encoder_module, "length_sorted_batches", fixed)
    old = tiny_encoder.encode(sentences, batch_size=8)
    alone = np.stack([tiny_encoder.encode([s])[0] for s in sentences])
    np.testing.assert_allclose(new, old, atol=1e-5)
    np.testing.assert_allclose(new, alone, atol=1e-5)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(max_size=80), max_size=12), st.integers(3, 40))
def test_token_ids_are_the_tokenizers_own(tiny_encoder: Any, texts: list[str], max_length: int) -> None:
    """The ids-only call gives the ids of the tokenizer's default call (every field), generated texts."""
    tokenizer = tiny_encoder.tokenizer
    want = tokenizer(texts, truncation=True, max_length=max_length)["input_ids"] if texts else []
    assert token_ids(tokenizer, texts, max_length) == want
