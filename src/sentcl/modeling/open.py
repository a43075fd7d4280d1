"""The one entry that opens a model: ``open_model(source)`` locates the folder and reads its kind once
(locate.py), then hands it to the loader of that kind, in one downward pass: an ``OnnxEncoder``
(onnx_encoder.py), a ``StaticEncoder`` (static.py), or a PyTorch ``SentenceEncoder`` / ``DualEncoder``
(loading.py: backbone, then its parts, then the encoder built last). ``open_encoder`` is the same pass for
one PyTorch encoder of a given class (what training starts from; ``SentenceEncoder.from_pretrained``).

The folder kinds, and what is read for each, are listed in locate.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.loading import NOT_TORCH, LoadOptions, load_single, load_torch
from sentcl.modeling.locate import FOLDER_KINDS, ModelSource, locate
from sentcl.modeling.onnx_encoder import ONNX_CONFIG, open_onnx
from sentcl.modeling.static import StaticEncoder
from sentcl.types import Encoder

BACKENDS = ("auto", "torch", "onnx")


def open_encoder(
    name: str, options: LoadOptions, encoder_class: type[SentenceEncoder] = SentenceEncoder
) -> SentenceEncoder:
    """One ``encoder_class`` of a sentcl, sentence-transformers or plain folder, or a hub id (a pair's f)."""
    return load_single(locate(name), options, encoder_class)


def open_model(
    source: str,
    *,
    pooler: str | None = None,
    backend: str = "auto",
    int8: bool = False,
    truncate_dim: int | None = None,
    threads: int | None = None,
    options: LoadOptions | None = None,
    needs_torch: str | None = None,
) -> Encoder:
    """The model at ``source`` (a folder of any kind, a hub id or an offline short name) as an ``Encoder``.

    ``backend``: ``onnx`` requires an exported folder, ``torch`` refuses one, ``auto`` follows the folder.
    ``pooler`` overrides the folder's (an ONNX export must agree); ``int8`` quantises a PyTorch model
    (an ONNX one must be an int8 export); ``truncate_dim`` keeps a Matryoshka prefix (one PyTorch encoder).
    ``options``: the rest of what a loader takes (training loads; ``SentenceEncoder.from_pretrained``).
    ``needs_torch``: what the caller does that only a PyTorch model can ("an ONNX export"): an ONNX or static
    folder is refused in those words, never as a ``--backend`` the user did not give.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}")
    found = locate(source)
    if needs_torch is not None:
        if found.kind in NOT_TORCH:
            raise ValueError(f"{source} is {NOT_TORCH[found.kind]}; {needs_torch} needs a PyTorch model")
        backend = "torch"
    if backend == "onnx" and found.kind == "static":
        raise ValueError(
            f"--backend onnx does not apply to {source}, a static model (a mean of token vectors): it runs "
            "without PyTorch already; leave --backend out"
        )
    if backend == "onnx" and found.kind != "onnx":
        raise ValueError(
            f"--backend onnx: {source} is not an exported ONNX folder (no {ONNX_CONFIG}); "
            f"export it first: sentcl export --format onnx {source} OUT"
        )
    if found.kind == "onnx" and backend != "torch":
        if truncate_dim is not None:
            raise ValueError("--truncate-dim runs with the PyTorch backend; add --backend torch")
        return open_onnx(found.path, pooler or (options.pooler if options else None), int8, threads)
    if found.kind == "static":  # a mean of token rows: no pooler, backend, int8 or truncation to choose
        asked = (("--pooler", pooler is not None), ("--backend torch", backend == "torch"), ("--int8", int8))
        refused = [name for name, given in (*asked, ("--truncate-dim", truncate_dim is not None)) if given]
        if refused:
            raise ValueError(
                f"{found.path} is a static model (a mean of token vectors); {', '.join(refused)} does not "
                "apply to it"
            )
        return StaticEncoder(found.path)
    if found.kind == "dual" and truncate_dim is not None:
        raise ValueError(f"--truncate-dim needs a single encoder; {source} is a pair of encoders")
    options = options or LoadOptions()
    if pooler is not None:
        options = dataclasses.replace(options, pooler=pooler)
    if truncate_dim is not None:
        options = dataclasses.replace(options, truncate_dim=truncate_dim)
    model = load_torch(found, options, SentenceEncoder)
    if int8:
        from sentcl.modeling.quantize import quantize_int8

        model = quantize_int8(model)
    return model


def load_encoder(name_or_path: str, **kwargs: Any) -> Any:
    """A SentenceEncoder, or a DualEncoder for a pair; kwargs as ``SentenceEncoder.from_pretrained``. Kept for
    old callers: ``open_model`` opens every kind of folder."""
    return open_model(name_or_path, options=LoadOptions(**kwargs))


__all__ = [
    "FOLDER_KINDS",
    "ModelSource",
    "load_encoder",
    "locate",
    "open_encoder",
    "open_model",
]
