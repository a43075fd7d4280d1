"""One way to open a model: ``open_model(source)`` works out the folder kind once (locate.py) and calls its
loader, building a ``SentenceEncoder`` (or a ``DualEncoder`` of two, or an ``OnnxEncoder``).

The folder kinds, and the loader of each, are listed in locate.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.loading import LoadOptions
from sentcl.modeling.locate import (  # noqa: F401 - re-exported: open.py was their home
    FOLDER_KINDS,
    ModelSource,
    check_json_files,
    load_dual,
    load_single,
    locate,
)
from sentcl.modeling.locate import open_single as _open_single
from sentcl.modeling.onnx_encoder import ONNX_CONFIG, OnnxEncoder
from sentcl.modeling.static import StaticEncoder
from sentcl.types import Encoder

BACKENDS = ("auto", "torch", "onnx")


def open_single(
    name: str, options: LoadOptions, encoder_class: type[SentenceEncoder] = SentenceEncoder
) -> SentenceEncoder:
    """One SentenceEncoder (``SentenceEncoder.from_pretrained``): a pair's f for a dual folder."""
    return _open_single(name, options, encoder_class)


def _load_onnx(source: ModelSource, pooler: str | None, int8: bool, threads: int | None) -> OnnxEncoder:
    encoder = OnnxEncoder(source.path, threads=threads)
    if pooler is not None and pooler != encoder.pooler:
        raise ValueError(
            f"{source.path} was exported with pooler {encoder.pooler!r}; --pooler {pooler} needs a new export "
            f"(sentcl export --format onnx MODEL OUT --pooler {pooler})"
        )
    if int8 and not encoder.meta.get("quantization"):
        raise ValueError(f"{source.path} is an fp32 export; --int8 with ONNX needs `sentcl export --int8`")
    return encoder


def _load_static(
    source: ModelSource, pooler: str | None, backend: str, int8: bool, truncate_dim: int | None
) -> StaticEncoder:
    """A static folder: no pooler (a mean of token rows), no backend, no int8, no truncation to choose."""
    asked = {"--pooler": pooler is not None, "--backend torch": backend == "torch", "--int8": int8}
    asked["--truncate-dim"] = truncate_dim is not None
    refused = [name for name, given in asked.items() if given]
    if refused:
        raise ValueError(
            f"{source.path} is a static model (a mean of token vectors); {', '.join(refused)} does not apply to it"
        )
    return StaticEncoder(source.path)


def open_model(
    source: str,
    *,
    pooler: str | None = None,
    backend: str = "auto",
    int8: bool = False,
    truncate_dim: int | None = None,
    threads: int | None = None,
    options: LoadOptions | None = None,
) -> Encoder:
    """The model at ``source`` (a folder of any kind, a hub id or an offline short name) as an ``Encoder``.

    ``backend``: ``onnx`` requires an exported folder, ``torch`` refuses one, ``auto`` follows the folder.
    ``pooler`` overrides the folder's (an ONNX export must agree); ``int8`` quantises a PyTorch model
    (an ONNX one must be an int8 export); ``truncate_dim`` keeps a Matryoshka prefix (one PyTorch encoder).
    ``options``: the rest of what a loader takes (training loads; ``SentenceEncoder.from_pretrained``).
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}")
    found = locate(source)
    if backend == "onnx" and found.kind != "onnx":
        raise ValueError(
            f"--backend onnx: {source} is not an exported ONNX folder (no {ONNX_CONFIG}); "
            f"export it first: sentcl export --format onnx {source} OUT"
        )
    if found.kind == "onnx" and backend != "torch":
        if truncate_dim is not None:
            raise ValueError("--truncate-dim runs with the PyTorch backend; add --backend torch")
        return _load_onnx(found, pooler or (options.pooler if options else None), int8, threads)
    if found.kind == "static":
        return _load_static(found, pooler, backend, int8, truncate_dim)
    options = LoadOptions() if options is None else options
    options = dataclasses.replace(options, pooler=pooler) if pooler is not None else options
    if found.kind == "dual":
        if truncate_dim is not None:
            raise ValueError(f"--truncate-dim needs a single encoder; {source} is a pair of encoders")
        model = load_dual(found, options, SentenceEncoder)
    else:
        model = load_single(found, options, SentenceEncoder)
        if truncate_dim is not None:
            model.set_truncate_dim(truncate_dim)
    if int8:
        from sentcl.modeling.quantize import quantize_int8

        model = quantize_int8(model)
    return model


def load_encoder(name_or_path: str, **kwargs: Any) -> Any:
    """A SentenceEncoder, or a DualEncoder for a pair; kwargs as ``SentenceEncoder.from_pretrained``. Kept for
    old callers: ``open_model`` opens every kind of folder."""
    return open_model(name_or_path, options=LoadOptions(**kwargs))


__all__ = ["FOLDER_KINDS", "ModelSource", "load_encoder", "locate", "open_model", "open_single"]
