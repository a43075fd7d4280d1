"""Encoders, poolers, heads and loading (``open_model``: one way to open any model).

The names below are imported on first use (PEP 562), so that a light module such as ``sentcl.config``
can import ``sentcl.modeling.pooling`` without pulling in the encoder (which itself reads the config).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sentcl.modeling.dual import DualEncoder
    from sentcl.modeling.encode_adapter import encode_fn
    from sentcl.modeling.encoder import SentenceEncoder
    from sentcl.modeling.heads import MLPHead
    from sentcl.modeling.open import load_encoder, open_model
    from sentcl.modeling.pooling import POOLERS, masked_mean, pool

_EXPORTS = {
    "POOLERS": "sentcl.modeling.pooling",
    "masked_mean": "sentcl.modeling.pooling",
    "pool": "sentcl.modeling.pooling",
    "DualEncoder": "sentcl.modeling.dual",
    "load_encoder": "sentcl.modeling.open",
    "encode_fn": "sentcl.modeling.encode_adapter",
    "SentenceEncoder": "sentcl.modeling.encoder",
    "MLPHead": "sentcl.modeling.heads",
    "open_model": "sentcl.modeling.open",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'sentcl.modeling' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


__all__ = [
    "POOLERS",
    "DualEncoder",
    "MLPHead",
    "SentenceEncoder",
    "encode_fn",
    "load_encoder",
    "masked_mean",
    "open_model",
    "pool",
]
