"""Common components folded into a static table: the folded table's mean of rows equals the sentence vectors
with their mean and top principal directions removed afterwards, computed here by numpy's SVD (the reference),
for generated tables and token lists."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sentcl.methods.static_components import common_components, remove_components


def _means(table: np.ndarray, lists: list[list[int]]) -> np.ndarray:
    return np.stack([table[ids].mean(axis=0) for ids in lists])  # (N, D), by hand


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 4), n=st.integers(12, 60))
def test_the_folded_table_removes_the_components_from_every_sentence(seed: int, k: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    table = rng.normal(size=(40, 8)).astype(np.float32) + rng.normal(size=8).astype(np.float32)  # (V, D)
    lists = [rng.integers(0, 40, size=rng.integers(1, 9)).tolist() for _ in range(n)]
    found = common_components(table, [*lists, []], k)  # a text without tokens is left out
    v = _means(table, lists).astype(np.float64)  # (N, D)
    c = v.mean(axis=0)
    u = np.linalg.svd(v - c, full_matrices=False)[2][:k]  # (k, D): the reference directions
    expected = (v - c) - ((v - c) @ u.T) @ u  # (N, D)
    got = _means(remove_components(table, found), lists)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got.mean(axis=0), 0.0, atol=1e-4)  # centred
    np.testing.assert_allclose(got @ found.directions.T, 0.0, atol=1e-4)  # nothing left along them
    singular = np.linalg.svd(v - c, compute_uv=False) ** 2
    assert found.explained == pytest.approx(singular[:k].sum() / singular.sum(), rel=1e-4)


def test_too_few_sentences_is_an_error_naming_the_count() -> None:
    table = np.eye(4, dtype=np.float32)
    with pytest.raises(ValueError, match="more than 3 sentences with tokens, got 2"):
        common_components(table, [[0], [1], []], 3)
