"""sentence-transformers folders: writing sentcl's parts as one (reading one is modeling/st_folder.py, whose
names are re-exported here).

Writing uses the spellings that sentence-transformers 3.x to 6.x all read: module types
``sentence_transformers.models.<Class>``, Pooling's ``word_embedding_dimension`` and ``pooling_mode_*``
booleans (6.x maps them to its ``pooling_mode``), Dense's ``in_features``/``out_features``/``bias``/
``activation_function`` (a ``torch.nn`` class path) with ``linear.weight``/``linear.bias`` in
``model.safetensors``, and ``config_sentence_transformers.json`` stamped with version 3.0.0 (the oldest
release this layout is written for, so no release warns that the folder is newer than itself). Poolers ST
cannot express (``avg_top2``, ``avg_first_last``) get no ST files at all: sentcl logs one line instead.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
import transformers
from safetensors.torch import save_file
from torch import nn

from sentcl.config.poolers import POOLER_TABLE
from sentcl.files.atomic import dumps_strict
from sentcl.modeling.heads import DENSE_ACTIVATIONS
from sentcl.modeling.st_folder import (  # noqa: F401 - the reading side, re-exported for old imports
    LEGACY_MODES,
    MODULES_JSON,
    ST_CONFIG,
    STLayout,
    is_head_like,
    is_st_folder,
    read_dense,
    read_st_folder,
    st_pooler,
)

logger = logging.getLogger("sentcl")

ST_MODEL_CONFIG = "config_sentence_transformers.json"
ST_WRITTEN_FOR = "3.0.0"
# sentcl inference pooler -> ST pooling mode (the pooler table's st_pooling); the others have none.
ST_POOLING_OF = {name: p.st_pooling for name, p in POOLER_TABLE.items() if p.st_pooling is not None}


# ---------------------------------------------------------------------------------------------- writing


def _write_json(path: Path, value: Any) -> None:
    path.write_text(dumps_strict(value) + "\n", encoding="utf-8")


def write_dense(layer: nn.Linear, activation: str, folder: Path) -> None:
    """One ST Dense module folder: config.json + model.safetensors (linear.weight, linear.bias)."""
    folder.mkdir(parents=True, exist_ok=True)
    act_cls = getattr(nn, DENSE_ACTIVATIONS[activation])
    _write_json(
        folder / "config.json",
        {
            "in_features": layer.in_features,
            "out_features": layer.out_features,
            "bias": layer.bias is not None,
            "activation_function": f"{act_cls.__module__}.{act_cls.__name__}",
        },
    )
    tensors = {f"linear.{k}": v.detach().cpu().contiguous() for k, v in layer.state_dict().items()}
    save_file(tensors, str(folder / "model.safetensors"))


def remove_st_files(folder: Path) -> None:
    """Remove the files that make ST load a folder its own way (a stale modules.json would be wrong)."""
    for name in (MODULES_JSON, ST_CONFIG, ST_MODEL_CONFIG):
        (folder / name).unlink(missing_ok=True)


def write_st_files(encoder: Any, folder: Path) -> list[str]:
    """Write the Dense folders of ``encoder.dense`` and, where ST can express the pooler, the ST layout.

    Returns the folder names of ``encoder.dense`` (in order), which sentcl.json records.
    """
    hidden = encoder.backbone.config.hidden_size
    inference_pooler = (
        "cls_before_pooler" if encoder.pooler == "cls" and encoder.mlp_only_train else encoder.pooler
    )
    modules: list[dict[str, Any]] = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]

    def add(kind: str) -> str:
        idx = len(modules)
        modules.append(
            {
                "idx": idx,
                "name": str(idx),
                "path": f"{idx}_{kind}",
                "type": f"sentence_transformers.models.{kind}",
            }
        )
        return f"{idx}_{kind}"

    if inference_pooler == "cls" and encoder.head is not None:
        write_dense(encoder.head.dense, encoder.head.activation, folder / add("Dense"))
    tail = []
    for layer in encoder.dense:
        tail.append(add("Dense"))
        write_dense(layer.linear, layer.activation, folder / tail[-1])
    mode = ST_POOLING_OF.get(inference_pooler)
    if mode is None:
        remove_st_files(folder)
        logger.warning(
            "%s: no sentence-transformers files written: pooler %r has no sentence-transformers Pooling "
            "equivalent; load the folder with sentcl (SentenceTransformer would fall back to mean pooling)",
            folder,
            encoder.pooler,
        )
        return tail
    if encoder.normalize_output:
        (folder / add("Normalize")).mkdir(exist_ok=True)
    (folder / "1_Pooling").mkdir(exist_ok=True)
    pooling = {
        "word_embedding_dimension": hidden,
        **{key: key_mode == mode for key, key_mode in LEGACY_MODES.items()},
    }
    _write_json(folder / "1_Pooling" / "config.json", pooling)
    _write_json(folder / ST_CONFIG, {"max_seq_length": encoder.max_length, "do_lower_case": False})
    _write_json(
        folder / ST_MODEL_CONFIG,
        {
            "__version__": {
                "sentence_transformers": ST_WRITTEN_FOR,
                "transformers": transformers.__version__,
                "pytorch": torch.__version__,
            },
            "prompts": {},
            "default_prompt_name": None,
            "similarity_fn_name": "cosine",
            "model_type": "SentenceTransformer",
        },
    )
    _write_json(folder / MODULES_JSON, modules)
    return tail
