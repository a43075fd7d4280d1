"""What kind of folder a model is, worked out once (``locate``), before any loader runs.

``open_model`` (open.py) and ``SentenceEncoder.from_pretrained`` both start here, then hand the located
folder to its loader; this module loads nothing and imports no loader.

The kinds, in the order they are recognised (the first file found decides):

============================  ================================  =========================================
kind                          recognised by                     what is read beside the backbone
============================  ================================  =========================================
``onnx``                      ``sentcl_onnx.json``              ``OnnxEncoder`` (onnx_encoder.py)
``dual``                      ``sentcl.json`` with ``dual``     f and g, each as ``sentcl`` (loading.py)
``sentcl``                    ``sentcl.json``                   ``sentcl_parts`` (parts.py)
``static``                    a StaticEmbedding module          ``StaticEncoder`` (static.py)
``sentence-transformers``     ``modules.json``                  ``st_parts`` (parts.py)
``transformers``              ``config.json``                   ``plain_parts`` (parts.py)
``hub``                       not a local path                  ``plain_parts`` (a hub id or its cache)
============================  ================================  =========================================

An offline short name (``all-MiniLM-L6-v2``) is resolved to its installed folder first. Before any loader
runs, every JSON file of a local folder (and of its module folders) is parsed, so a damaged one is an error
naming it; a folder with none of the files above is "no model files in DIR". ``sentcl.json`` is read here,
once, and handed to the loader.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sentcl.files.paths import ModelFolderError, resolve_model_path
from sentcl.files.read import read_json
from sentcl.modeling.onnx_encoder import ONNX_CONFIG, is_onnx_folder
from sentcl.modeling.sentcl_json import read_sentcl_json
from sentcl.modeling.st_folder import MODULES_JSON, is_st_folder
from sentcl.modeling.static import is_static_folder

FOLDER_KINDS = ("onnx", "dual", "sentcl", "static", "sentence-transformers", "transformers", "hub")
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
    if is_static_folder(folder):
        return ModelSource(name, path, "static")
    if is_st_folder(folder):
        return ModelSource(name, path, "sentence-transformers")
    if (folder / "config.json").is_file():
        return ModelSource(name, path, "transformers")
    raise ModelFolderError(
        f"no model files in {folder} (none of sentcl.json, {MODULES_JSON}, config.json, {ONNX_CONFIG}); "
        "pass a model folder, a hub id or an offline short name"
    )


__all__ = ["FOLDER_KINDS", "ModelSource", "check_json_files", "locate"]
