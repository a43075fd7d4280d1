"""Comparing two training steps: embeddings, loss and every parameter gradient."""

from __future__ import annotations

import torch


def backward_outputs(model: torch.nn.Module, z: torch.Tensor, loss: torch.Tensor) -> tuple:
    """(z detached, loss, every parameter's gradient) after ``loss.backward()``; the gradients are cleared."""
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return z.detach(), float(loss.detach()), grads


def assert_same_step(a: tuple, b: tuple) -> None:
    """Two ``backward_outputs``: embeddings, loss and every gradient within 1e-5."""
    torch.testing.assert_close(a[0], b[0], atol=1e-5, rtol=0)
    assert abs(a[1] - b[1]) < 1e-5
    assert a[2].keys() == b[2].keys() and len(a[2]) > 10
    for name in a[2]:
        torch.testing.assert_close(a[2][name], b[2][name], atol=1e-5, rtol=0, msg=f"gradient of {name}")
