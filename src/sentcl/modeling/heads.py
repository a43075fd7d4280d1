"""The MLP head over [CLS]: ``h = act(W x + b)``, act = Tanh (SimCSE) or LeakyReLU (strong view of cutoff-triplet)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

ACTIVATIONS = ("tanh", "leaky_relu")


class MLPHead(nn.Module):
    """Linear(H, H) followed by an activation chosen per call; one set of weights for every activation."""

    def __init__(self, hidden_size: int, activation: str = "tanh") -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown head activation {activation!r}; valid: {', '.join(ACTIVATIONS)}")
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.activation = activation

    def forward(self, x: Tensor, activation: str | None = None) -> Tensor:
        act = activation or self.activation
        y = self.dense(x)  # (N, H)
        if act == "tanh":
            return torch.tanh(y)
        if act == "leaky_relu":
            return nn.functional.leaky_relu(y)
        raise ValueError(f"unknown head activation {act!r}; valid: {', '.join(ACTIVATIONS)}")
