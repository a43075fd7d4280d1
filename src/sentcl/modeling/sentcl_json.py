"""A sentcl model folder's ``sentcl.json`` read and checked key by key (a malformed key is an error naming the
file), and the two truncations it records under the old and the new key names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sentcl.config.poolers import POOLERS
from sentcl.files.paths import ModelFolderError
from sentcl.files.read import read_json
from sentcl.modeling.folder_layout import SENTCL_CONFIG
from sentcl.modeling.heads import ACTIVATIONS
from sentcl.modeling.postprocess.storage import check_postprocess_meta
from sentcl.modeling.prompt import DENOISE_MODES, check_template


def _check_type(file: Path, meta: dict[str, Any], key: str, ok: bool, expected: str) -> None:
    if key in meta and not ok:
        raise ModelFolderError(f"{file}: {key!r} must be {expected}, got {meta[key]!r}")


def read_sentcl_json(folder: Path) -> dict[str, Any] | None:
    """sentcl.json of a folder, validated key by key; None when the folder has none."""
    file = folder / SENTCL_CONFIG
    if not file.is_file():
        return None
    meta = read_json(file, dict, error=ModelFolderError)
    get = meta.get

    def positive_int(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value > 0

    _check_type(file, meta, "pooler", get("pooler") in POOLERS, f"one of {', '.join(POOLERS)}")
    _check_type(file, meta, "mlp_only_train", isinstance(get("mlp_only_train"), bool), "true or false")
    for key in ("max_length", "train_max_length", "inference_max_length"):
        _check_type(file, meta, key, positive_int(get(key)), "a positive whole number")
    _check_type(file, meta, "normalize", isinstance(get("normalize"), bool), "true or false")
    _check_type(file, meta, "truncate_dim", positive_int(get("truncate_dim")), "a positive whole number")
    _check_type(
        file,
        meta,
        "head_activation",
        get("head_activation") in ACTIVATIONS,
        f"one of {', '.join(ACTIVATIONS)}",
    )
    dense_ok = isinstance(get("dense"), list) and all(isinstance(d, str) for d in get("dense", []))
    _check_type(file, meta, "dense", dense_ok, "a list of folder names")
    dual = get("dual")
    dual_ok = (
        isinstance(dual, dict)
        and dual.get("combine") in ("f", "concat")
        and isinstance(dual.get("context_encoder"), str)
    )
    _check_type(file, meta, "dual", dual_ok, "an object with combine (f or concat) and context_encoder")
    prompt = get("prompt")
    prompt_ok = (
        isinstance(prompt, dict)
        and isinstance(prompt.get("templates"), list)
        and len(prompt["templates"]) > 0
        and all(isinstance(t, str) for t in prompt["templates"])
        and prompt.get("denoise", "train") in DENOISE_MODES
    )
    _check_type(
        file,
        meta,
        "prompt",
        prompt_ok,
        f"an object with templates (a list of strings) and denoise ({'/'.join(DENOISE_MODES)})",
    )
    if prompt_ok:
        for template in prompt["templates"]:
            try:
                check_template(template)
            except ValueError as err:
                raise ModelFolderError(f"{file}: {err}") from None
    check_postprocess_meta(file, meta)
    return meta


def saved_lengths(meta: dict[str, Any]) -> tuple[int | None, int | None]:
    """(training, inference) truncation of a sentcl.json. Files written since the rename say
    ``train_max_length`` and ``max_length`` (inference); older ones said ``max_length`` (training) and
    ``inference_max_length``."""
    if "train_max_length" in meta:
        return meta["train_max_length"], meta.get("max_length")
    return meta.get("max_length"), meta.get("inference_max_length")
