"""One way to open a model: ``open_model(source)`` works out the folder kind once and calls its loader.

The kinds, in the order they are recognised (the first file found decides):

============================  ================================  =========================================
kind                          recognised by                     loader
============================  ================================  =========================================
``onnx``                      ``sentcl_onnx.json``              ``OnnxEncoder`` (onnx_encoder.py)
``dual``                      ``sentcl.json`` with ``dual``     f and g (``load_sentcl`` each), DualEncoder
``sentcl``                    ``sentcl.json``                   ``load_sentcl`` (loading.py)
``sentence-transformers``     ``modules.json``                  ``load_st`` (loading.py)
``transformers``              ``config.json``                   ``load_plain`` (loading.py)
``hub``                       not a local path                  ``load_plain`` (a hub id or its cache)
============================  ================================  =========================================

An offline short name (``all-MiniLM-L6-v2``) is resolved to its installed folder first. Before any loader
runs, every JSON file of a local folder (and of its module folders) is parsed, so a damaged one is an error
naming it; a folder with none of the files above is "no model files in DIR". ``sentcl.json`` is read here,
once, and handed to the loader.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sentcl.files import read_json
from sentcl.modeling.loading import LoadOptions, load_plain, load_sentcl, load_st, read_sentcl_json
from sentcl.modeling.onnx_encoder import ONNX_CONFIG, OnnxEncoder, is_onnx_folder
from sentcl.modeling.st_folder import MODULES_JSON, is_st_folder
from sentcl.paths import ModelFolderError, resolve_model_path
from sentcl.types import Encoder

FOLDER_KINDS = ("onnx", "dual", "sentcl", "sentence-transformers", "transformers", "hub")
BACKENDS = ("auto", "torch", "onnx")
# read by their loader (once); every other JSON file of the folder is parsed by check_json_files
_READ_BY_LOADER = frozenset({"sentcl.json", ONNX_CONFIG, MODULES_JSON})


@dataclass(frozen=True)
class ModelSource:
    """Where a model is and what kind of folder it is, worked out once."""

    name: str  # as the caller gave it
    path: str  # resolved: an offline short name's folder, a local folder, or a hub id
    kind: str  # one of FOLDER_KINDS
    saved: dict[str, Any] | None = None  # sentcl.json, read once

    @property
    def folder(self) -> Path:
        return Path(self.path)


def check_json_files(folder: Path) -> None:
    """Parse every JSON file of the folder and of its module folders: a damaged one is an error naming it."""
    files = [*folder.glob("*.json"), *folder.glob("*/*.json")]
    for file in sorted(files):
        if file.name not in _READ_BY_LOADER or file.parent != folder:
            read_json(file, object, error=ModelFolderError)


def locate(name: str) -> ModelSource:
    """The ModelSource of a hub id, local folder or offline short name."""
    path = resolve_model_path(name)
    folder = Path(path)
    if not folder.exists():
        return ModelSource(name, path, "hub")
    if not folder.is_dir():
        raise ModelFolderError(f"{folder}: a file, not a model folder")
    check_json_files(folder)
    if is_onnx_folder(folder):
        return ModelSource(name, path, "onnx")
    saved = read_sentcl_json(folder)
    if saved is not None:
        return ModelSource(name, path, "dual" if saved.get("dual") else "sentcl", saved)
    if is_st_folder(folder):
        return ModelSource(name, path, "sentence-transformers")
    if (folder / "config.json").is_file():
        return ModelSource(name, path, "transformers")
    raise ModelFolderError(
        f"no model files in {folder} (none of sentcl.json, {MODULES_JSON}, config.json, {ONNX_CONFIG}); "
        "pass a model folder, a hub id or an offline short name"
    )


def _load_single(source: ModelSource, options: LoadOptions) -> Any:
    """One SentenceEncoder of a sentcl, sentence-transformers or plain folder (a pair's f)."""
    if source.kind == "onnx":
        raise ModelFolderError(
            f"{source.path} is an exported ONNX folder ({ONNX_CONFIG}), not a PyTorch model; open it with "
            "open_model / --backend onnx or auto"
        )
    if source.saved is not None:
        return load_sentcl(source.name, source.folder, source.saved, options)
    if source.kind == "sentence-transformers":
        return load_st(source.name, source.folder, options)
    return load_plain(source.name, source.path, options)


def open_single(name: str, options: LoadOptions) -> Any:
    """One SentenceEncoder (``SentenceEncoder.from_pretrained``): a pair's f for a dual folder."""
    return _load_single(locate(name), options)


def _load_dual(source: ModelSource, options: LoadOptions) -> Any:
    from sentcl.modeling.dual import DualEncoder

    assert source.saved is not None
    dual = source.saved["dual"]
    f = _load_single(source, options)
    g = open_single(str(source.folder / dual["context_encoder"]), options)
    return DualEncoder(f, g, dual["combine"])


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
    options = LoadOptions() if options is None else options
    options = dataclasses.replace(options, pooler=pooler) if pooler is not None else options
    if found.kind == "dual":
        if truncate_dim is not None:
            raise ValueError(f"--truncate-dim needs a single encoder; {source} is a pair of encoders")
        model = _load_dual(found, options)
    else:
        model = _load_single(found, options)
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
