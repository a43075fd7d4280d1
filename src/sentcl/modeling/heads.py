"""Layers over the pooled vector.

``MLPHead``: ``h = act(W x + b)`` over [CLS], act = Tanh (SimCSE) or LeakyReLU (strong view of
cutoff-triplet). A new head is initialised as the SimCSE reference initialises its ``MLPLayer`` (through
BERT's ``_init_weights``): W ~ normal(0, ``initializer_range``), b = 0.

``DenseLayer``: a sentence-transformers ``Dense`` module (any in/out size, an activation from a fixed list),
applied after the pooler and head when a model came from, or goes to, a sentence-transformers folder.

``after_pooling``: every layer over the pooled vector in order (head, Dense layers, a flow, a Matryoshka
prefix, the normalisation): what ``SentenceEncoder.forward`` and the packed forward apply to the pooled rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from sentcl.similarity import unit_rows

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


def after_pooling(
    z: Tensor,
    head: MLPHead | None,
    head_activation: str | Sequence[str] | None,
    dense: Sequence[nn.Module],
    flow: nn.Module | None,
    truncate_dim: int | None,
    normalize: bool,
) -> Tensor:
    """Pooled (N, H) -> the embedding (N, D): the head (None: it does not apply), the Dense layers, a flow, the
    first ``truncate_dim`` values, the normalisation. ``head_activation`` as a sequence of V names treats the
    rows as (B, V) example-major views and gives view v the head with activation v."""
    if head is not None and (head_activation is None or isinstance(head_activation, str)):
        z = head(z, head_activation)  # (N, H)
    elif head is not None:
        views = len(head_activation)  # type: ignore[arg-type]
        z = z.view(-1, views, z.size(-1))  # (B, V, H)
        z = torch.stack(
            [head(z[:, v], act) for v, act in enumerate(head_activation)],  # type: ignore[arg-type]
            dim=1,
        )  # (B, V, H)
        z = z.view(-1, z.size(-1))  # (B·V, H)
    for layer in dense:
        z = layer(z)  # (N, D)
    z = flow(z) if flow is not None else z  # (N, D): BERT-flow's latent
    if truncate_dim is not None:
        z = z[..., :truncate_dim]  # (N, k): a Matryoshka prefix, re-normalised below if normalized
    return unit_rows(z) if normalize else z
