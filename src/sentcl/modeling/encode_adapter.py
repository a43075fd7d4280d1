"""The one model -> ``EncodeFn`` adapter: evaluators take a function, not a model."""

from __future__ import annotations

from typing import Any

from sentcl.types import EncodeFn


def encode_fn(model: Any, batch_size: int, max_length: int | None = None) -> EncodeFn:
    """sentences -> ``model.encode(sentences, batch_size=..., max_length=...)`` as numpy (N, D).

    ``model`` is anything with sentcl's ``encode`` (SentenceEncoder, DualEncoder, the ONNX encoder);
    ``max_length`` None keeps the model's own inference length (and is not passed on).
    """
    options: dict[str, Any] = {"batch_size": batch_size}
    if max_length is not None:
        options["max_length"] = max_length
    return lambda sentences: model.encode(sentences, **options)


__all__ = ["encode_fn"]
