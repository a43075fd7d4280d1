"""Layers over the pooled vector.

``MLPHead``: ``h = act(W x + b)`` over [CLS], act = Tanh (SimCSE) or LeakyReLU (strong view of
cutoff-triplet). A new head is initialised as the SimCSE reference initialises its ``MLPLayer`` (through
BERT's ``_init_weights``): W ~ normal(0, ``initializer_range``), b = 0.

``DenseLayer``: a sentence-transformers ``Dense`` module (any in/out size, an activation from a fixed list),
applied after the pooler and head when a model came from, or goes to, a sentence-transformers folder.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

ACTIVATIONS = ("tanh", "leaky_relu")
# DenseLayer's activations: sentcl name -> torch.nn class name (as sentence-transformers spells it).
DENSE_ACTIVATIONS = {
    "tanh": "Tanh",
    "leaky_relu": "LeakyReLU",
    "identity": "Identity",
    "relu": "ReLU",
    "gelu": "GELU",
    "sigmoid": "Sigmoid",
}
DEFAULT_INITIALIZER_RANGE = 0.02  # BERT's and RoBERTa's initializer_range


class MLPHead(nn.Module):
    """Linear(H, H) followed by an activation chosen per call; one set of weights for every activation."""

    def __init__(
        self, hidden_size: int, activation: str = "tanh", init_std: float = DEFAULT_INITIALIZER_RANGE
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown head activation {activation!r}; valid: {', '.join(ACTIVATIONS)}")
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.activation = activation
        nn.init.normal_(self.dense.weight, mean=0.0, std=init_std)
        nn.init.zeros_(self.dense.bias)

    def forward(self, x: Tensor, activation: str | None = None) -> Tensor:
        act = activation or self.activation
        y = self.dense(x)  # (N, H)
        if act == "tanh":
            return torch.tanh(y)
        if act == "leaky_relu":
            return nn.functional.leaky_relu(y)
        raise ValueError(f"unknown head activation {act!r}; valid: {', '.join(ACTIVATIONS)}")


class DenseLayer(nn.Module):
    """``act(W x + b)``: (N, in_features) -> (N, out_features), sentence-transformers' Dense module."""

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, activation: str = "tanh"
    ) -> None:
        super().__init__()
        if activation not in DENSE_ACTIVATIONS:
            raise ValueError(
                f"unknown dense activation {activation!r}; valid: {', '.join(DENSE_ACTIVATIONS)}"
            )
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        self.activation = activation
        self.act = getattr(nn, DENSE_ACTIVATIONS[activation])()
        self.source: str | None = None  # the file it was read from (named in errors)

    def forward(self, x: Tensor) -> Tensor:
        return self.act(self.linear(x))  # (N, out_features)
