"""sentcl.similarity.unit_rows, the one row normalisation, against a hand-written loop (math.sqrt of the sum of
squares per row), for numpy and torch, on generated arrays and on the named cases (a zero row, any leading shape,
integers, gradients)."""

from __future__ import annotations

import math

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sentcl.similarity import cosine_matrix, unit_rows


def by_hand(rows: list[list[float]]) -> list[list[float]]:
    out = []
    for row in rows:
        norm = math.sqrt(sum(v * v for v in row))
        out.append([v / max(norm, 1e-12) for v in row])  # the documented eps: a zero row stays zero
    return out


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, width=64)
matrices = st.tuples(st.integers(1, 6), st.integers(1, 8)).flatmap(
    lambda shape: arrays(np.float64, shape, elements=finite)
)


@settings(max_examples=60, deadline=None)
@given(matrices)
def test_numpy_and_torch_match_the_hand_loop(x: np.ndarray) -> None:
    want = np.array(by_hand(x.tolist()))
    got = unit_rows(x)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64 and got.shape == x.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-290)
    got_t = unit_rows(torch.from_numpy(x))
    assert isinstance(got_t, torch.Tensor)
    np.testing.assert_allclose(got_t.numpy(), want, rtol=1e-12, atol=1e-290)
    assert np.shares_memory(got, x) is False  # a new array: the caller's rows are untouched


def test_a_zero_row_stays_zero_and_leading_axes_are_kept() -> None:
    x = np.array([[[3.0, 4.0], [0.0, 0.0]], [[0.0, -2.0], [1.0, 1.0]]], dtype=np.float32)  # (2, 2, 2)
    got = unit_rows(x)
    assert got.dtype == np.float32 and got.shape == (2, 2, 2)
    np.testing.assert_allclose(got.reshape(4, 2), by_hand(x.reshape(4, 2).tolist()), rtol=1e-6)
    assert np.all(unit_rows(np.zeros((3, 5))) == 0)
    assert unit_rows(np.array([[3, 4]])).tolist() == [[0.6, 0.8]]  # integers give float64


def test_torch_keeps_the_graph() -> None:
    x = torch.tensor([[3.0, 4.0], [1.0, 0.0]], requires_grad=True)
    unit_rows(x)[0, 0].backward()  # d(x0/|x|)/dx = (|x|^2 - x0^2) / |x|^3 at (3, 4): 16/125, then -12/125
    assert x.grad is not None
    np.testing.assert_allclose(x.grad[0].numpy(), [16 / 125, -12 / 125], rtol=1e-6)


def test_cosine_matrix_is_unit_rows_times_their_transpose() -> None:
    a, b = torch.randn(4, 3, generator=torch.Generator().manual_seed(0)), torch.randn(5, 3)
    want = [
        [float(np.dot(x, y) / np.sqrt(np.dot(x, x) * np.dot(y, y))) for y in b.numpy()] for x in a.numpy()
    ]
    np.testing.assert_allclose(cosine_matrix(a, b).numpy(), want, rtol=1e-5)
