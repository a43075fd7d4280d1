"""What a model folder holds beside its backbone, read per folder kind and checked against the backbone: the
pooler, the MLP head, the Dense layers, the normalisation, the lengths, a flow and a Matryoshka prefix.

Each reader (``sentcl_parts``, ``st_parts``, ``plain_parts``) returns the ``Parts``; the loader (loading.py)
checks them against the backbone and builds the encoder last, in one call:

- ``sentcl_parts``, a sentcl folder (``sentcl.json``): its pooler, MLP head (``sentcl_head.safetensors``), Dense
  layers, normalisation and flow; a missing or malformed part is an error naming the file.
- ``st_parts``, a sentence-transformers folder (``modules.json``): its Pooling, Dense and Normalize modules and
  its ``max_seq_length`` (st_folder.py), so that embeddings equal ``SentenceTransformer``'s.
- ``plain_parts``, a plain Hugging Face folder or hub id: pooler ``cls`` at inference uses the backbone's own
  pooler (BERT's ``pooler.dense`` + tanh, where the official SimCSE checkpoints keep their trained MLP), as
  SimCSE's ``evaluation.py --pooler cls`` does; without trained pooler weights it is an error naming the
  poolers that need no head.

For training (``for_training=True``) a missing head is new, initialised as the SimCSE reference does:
normal(0, ``initializer_range``), bias 0. A saved head's shapes are checked against the backbone's hidden
size here; the Dense widths, the lengths and finite weights are checked by the loader.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from safetensors.torch import load_file

from sentcl.config.poolers import HEADLESS_POOLERS, pooler_info
from sentcl.defaults import POOLER
from sentcl.files.paths import ModelFolderError
from sentcl.modeling.backbone import Backbone, backbone_pooler_head
from sentcl.modeling.folder_layout import HEAD_WEIGHTS, SENTCL_CONFIG
from sentcl.modeling.heads import DenseLayer, MLPHead
from sentcl.modeling.postprocess.storage import load_flow
from sentcl.modeling.sentcl_json import saved_lengths
from sentcl.modeling.st_folder import STLayout, is_head_like, read_dense
from sentcl.modeling.weights import check_safetensors, load_checked

if TYPE_CHECKING:
    from sentcl.modeling.loading import LoadOptions

logger = logging.getLogger("sentcl")


@dataclass
class Parts:
    """What a reader found beside the backbone, before the encoder is built."""

    pooler: str
    head: MLPHead | None = None
    dense: list[DenseLayer] = field(default_factory=list)
    normalize: bool = False
    seq_limit: int | None = None  # the folder's inference truncation
    train_max_length: int | None = None
    mlp_only_train: bool = False
    flow: Any = None  # a BERT-flow (sentcl.postprocess)
    postprocess: dict[str, Any] | None = None  # what was fitted on what (sentcl.json "postprocess")
    truncate_dim: int | None = None  # a Matryoshka prefix


def _new_head(config: Any, where: str, over: str) -> MLPHead:
    std = float(getattr(config, "initializer_range", 0.02))
    logger.info("%s: new MLP head over %s, normal(0, %g), bias 0", where, over, std)
    return MLPHead(config.hidden_size, init_std=std)


def _saved_head(folder: Path, saved: dict[str, Any], hidden: int) -> MLPHead:
    """sentcl_head.safetensors, its shapes checked against the backbone's hidden size."""
    file = folder / HEAD_WEIGHTS
    check_safetensors(file)
    head = MLPHead(hidden, activation=saved.get("head_activation", "tanh"))
    load_checked(head, file, load_file(str(file)), f"the backbone's hidden_size {hidden}")
    return head


def _cls_head_without_file(loaded: Backbone, options: LoadOptions, where: str) -> MLPHead:
    """Pooler cls with no head in the folder: new for training, else the backbone's own pooler."""
    if options.for_training:
        return _new_head(loaded.config, where, "[CLS]")
    return backbone_pooler_head(loaded.model, loaded.missing, where)


def _prompt_head(
    folder: Path, saved: dict[str, Any] | None, config: Any, for_training: bool, where: str
) -> MLPHead | None:
    """Pooler mask's MLP over the [MASK] state (PromptBERT / SNCSE train with it, ``mlp_only_train``): the
    folder's, new for training, else none (inference on the [MASK] state itself)."""
    head_file = folder / HEAD_WEIGHTS
    if saved is not None and head_file.is_file():
        return _saved_head(folder, saved, config.hidden_size)
    if saved is not None and "head_activation" in saved:
        raise ModelFolderError(f"{head_file}: missing; {folder / SENTCL_CONFIG} names a trained MLP head")
    if for_training:
        return _new_head(config, where, "[MASK]")
    return None


def sentcl_parts(folder: Path, saved: dict[str, Any], loaded: Backbone, options: LoadOptions) -> Parts:
    """The parts of a folder sentcl saved (sentcl.json read once, by locate)."""
    pooler = options.pooler or saved.get("pooler", POOLER)
    dense_folders = [folder / d for d in saved.get("dense", [])]
    train_len, seq_limit = saved_lengths(saved)
    parts = Parts(
        pooler,
        dense=list(map(read_dense, dense_folders)),
        normalize=saved.get("normalize", False),
        seq_limit=seq_limit,
        train_max_length=train_len,
        mlp_only_train=saved.get("mlp_only_train", False),
        flow=load_flow(folder, saved),  # whitening is one of the Dense layers; a flow is its own module
        postprocess=saved.get("postprocess"),
        truncate_dim=saved.get("truncate_dim"),
    )
    if pooler == "cls":
        if (folder / HEAD_WEIGHTS).is_file():
            parts.head = _saved_head(folder, saved, loaded.config.hidden_size)
        elif saved.get("pooler", "cls") == "cls":
            raise ModelFolderError(
                f"{folder / HEAD_WEIGHTS}: missing; {folder / SENTCL_CONFIG} says pooler 'cls', whose trained MLP "
                f"head is stored in that file (copy it back, or load with a pooler that needs no head: "
                f"{', '.join(HEADLESS_POOLERS)})"
            )
        else:
            parts.head = _cls_head_without_file(loaded, options, str(folder))
    elif pooler_info(pooler).prompt:
        parts.head = _prompt_head(folder, saved, loaded.config, options.for_training, str(folder))
    return parts


def _head_from_dense(layer: DenseLayer) -> MLPHead:
    head = MLPHead(layer.linear.in_features, activation=layer.activation)
    head.dense.load_state_dict(layer.linear.state_dict())
    return head


def st_parts(folder: Path, layout: STLayout, loaded: Backbone, options: LoadOptions) -> Parts:
    """The parts of a sentence-transformers folder (modules.json) that sentcl did not save."""
    pooler = options.pooler or layout.pooler
    if options.pooler is None:
        head_note = " + Dense head" if pooler == "cls" else ""
        logger.info(
            "%s: sentence-transformers folder: pooler %r (its Pooling mode %r%s)",
            folder, pooler, layout.pooling_mode, head_note,
        )  # fmt: skip
    parts = Parts(
        pooler, dense=list(layout.dense), normalize=layout.normalize, seq_limit=layout.max_seq_length
    )
    if pooler == "cls":
        if layout.pooler == "cls" and parts.dense and is_head_like(parts.dense[0], loaded.config.hidden_size):
            parts.head = _head_from_dense(parts.dense.pop(0))
        else:
            parts.head = _cls_head_without_file(loaded, options, str(folder))
    elif pooler_info(pooler).prompt:
        parts.head = _prompt_head(folder, None, loaded.config, options.for_training, str(folder))
    return parts


def plain_parts(path: str, loaded: Backbone, options: LoadOptions) -> Parts:
    """The parts of a plain Hugging Face folder or hub id (no sentcl.json, no modules.json)."""
    parts = Parts(options.pooler or POOLER)
    if parts.pooler == "cls":
        parts.head = _cls_head_without_file(loaded, options, path)
    elif pooler_info(parts.pooler).prompt:
        parts.head = _prompt_head(Path(path), None, loaded.config, options.for_training, path)
    return parts
