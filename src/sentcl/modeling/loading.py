"""The loaders of one SentenceEncoder, one per folder kind, never with an untrained part at inference.

``open_model`` (open.py) works out the kind once (locate.py) and calls one of these with the class to build
(``SentenceEncoder``, or the class whose ``from_pretrained`` was called), so this module sits below encoder.py:

- ``load_sentcl``, a sentcl folder (``sentcl.json``): its pooler, MLP head (``sentcl_head.safetensors``), Dense
  layers and normalisation; a missing or malformed part is an error naming the file.
- ``load_st``, a sentence-transformers folder (``modules.json``): its Pooling, Dense and Normalize modules and
  its ``max_seq_length`` (st_folder.py), so that embeddings equal ``SentenceTransformer``'s.
- ``load_plain``, a plain Hugging Face folder or hub id: pooler ``cls`` at inference uses the backbone's own pooler (BERT's
  ``pooler.dense`` + tanh, where the official SimCSE checkpoints keep their trained MLP), as SimCSE's
  ``evaluation.py --pooler cls`` does; without trained pooler weights it is an error naming the poolers that
  need no head.

For training (``for_training=True``) a missing head is new, initialised as the SimCSE reference does:
normal(0, ``initializer_range``), bias 0. At inference the weights must be finite, and the backbone must
have every weight (a missing one would be random). Every part's shape is checked against the backbone at
load: weights against config.json (``hidden_size``), the head against the hidden size, each Dense module
against the width it receives; a mismatch names the file and both shapes. The backbone's own loading and
checks are backbone.py; sentcl.json's reading is sentcl_json.py.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from safetensors.torch import load_file
from torch import nn

from sentcl.config.poolers import HEADLESS_POOLERS, pooler_info
from sentcl.config.typed import ConfigError
from sentcl.defaults import POOLER, TRAIN_MAX_LENGTH
from sentcl.files.paths import ModelFolderError
from sentcl.modeling.backbone import backbone_pooler_head, check_finite, load_backbone
from sentcl.modeling.folder_layout import HEAD_WEIGHTS, SENTCL_CONFIG, position_limit
from sentcl.modeling.heads import DenseLayer, MLPHead
from sentcl.modeling.prompt import PROMPTBERT_BERT_TEMPLATES
from sentcl.modeling.sentcl_json import saved_lengths
from sentcl.modeling.st_folder import check_dense_chain, is_head_like, read_dense, read_st_folder, st_pooler
from sentcl.modeling.weights import load_checked
from sentcl.postprocess.storage import load_flow

if TYPE_CHECKING:
    from sentcl.modeling.encoder import SentenceEncoder

logger = logging.getLogger("sentcl")


@dataclass(frozen=True)
class LoadOptions:
    """What the caller asks of a loader; None: what the folder says."""

    pooler: str | None = None
    mlp_only_train: bool | None = None
    train_max_length: int | None = None  # the training truncation (SentenceEncoder.train_max_length)
    dropout: float | None = None
    for_training: bool = False  # a missing MLP head may be new
    prompt: list[str] | None = None
    prompt_denoise: str | None = None


@dataclass
class Parts:
    """What a loader found beside the backbone, before the encoder is assembled."""

    pooler: str
    head: MLPHead | None = None
    dense: list[DenseLayer] = field(default_factory=list)
    normalize: bool = False
    seq_limit: int | None = None  # the folder's inference truncation
    train_max_length: int | None = None
    mlp_only_train: bool = False


def _backbone(path: str, name: str, options: LoadOptions) -> tuple[Any, nn.Module, Any, set[str]]:
    """load_backbone, and at inference no weight missing (it would be random)."""
    config, backbone, tokenizer, missing = load_backbone(path, name, options.dropout)
    lost = sorted(k for k in missing if not k.startswith("pooler."))
    if lost and not options.for_training:
        raise ModelFolderError(
            f"{path}: weights missing from the folder, which would be random: {', '.join(lost[:5])}"
            + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
        )
    return config, backbone, tokenizer, missing


def _new_head(config: Any, where: str, over: str) -> MLPHead:
    std = float(getattr(config, "initializer_range", 0.02))
    logger.info("%s: new MLP head over %s, normal(0, %g), bias 0", where, over, std)
    return MLPHead(config.hidden_size, init_std=std)


def _saved_head(folder: Path, saved: dict[str, Any], hidden: int) -> MLPHead:
    """sentcl_head.safetensors, its shapes checked against the backbone's hidden size."""
    from sentcl.modeling.weights import check_safetensors

    file = folder / HEAD_WEIGHTS
    check_safetensors(file)
    head = MLPHead(hidden, activation=saved.get("head_activation", "tanh"))
    load_checked(head, file, load_file(str(file)), f"the backbone's hidden_size {hidden}")
    return head


def _cls_head_without_file(
    config: Any, backbone: nn.Module, missing: set[str], options: LoadOptions, where: str
) -> MLPHead:
    """Pooler cls with no head in the folder: new for training, else the backbone's own pooler."""
    if options.for_training:
        return _new_head(config, where, "[CLS]")
    return backbone_pooler_head(backbone, missing, where)


def _head_from_dense(layer: DenseLayer) -> MLPHead:
    head = MLPHead(layer.linear.in_features, activation=layer.activation)
    head.dense.load_state_dict(layer.linear.state_dict())
    return head


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


def _prompt_settings(pooler: str, saved: dict[str, Any] | None, options: LoadOptions) -> dict[str, Any]:
    """PromptBERT's templates: the arguments', else the folder's (sentcl.json "prompt"); none unless the
    pooler reads a template."""
    if not pooler_info(pooler).prompt:
        return {}
    stored = (saved or {}).get("prompt") or {}
    templates = options.prompt or stored.get("templates") or list(PROMPTBERT_BERT_TEMPLATES)
    denoise = options.prompt_denoise
    return {
        "prompt": templates,
        "prompt_denoise": stored.get("denoise", "train") if denoise is None else denoise,
    }


def _assemble(
    name: str, path: str, loaded: tuple[Any, nn.Module, Any, set[str]], parts: Parts, options: LoadOptions,
    encoder_class: type[SentenceEncoder], saved: dict[str, Any] | None = None,
) -> SentenceEncoder:  # fmt: skip
    """An ``encoder_class`` of a backbone and its parts: lengths and shapes checked against the backbone."""
    config, backbone, tokenizer, _ = loaded
    limit = position_limit(config)
    train_max_length = options.train_max_length or parts.train_max_length or TRAIN_MAX_LENGTH
    lengths = ((train_max_length, "training truncation model.max_length"), (parts.seq_limit, "max_length"))
    for value, source in lengths:
        if limit is not None and value is not None and value > limit:
            raise ConfigError(
                f"{source}={value} is above the position limit of model {name} ({limit} tokens, from "
                f"its config.json max_position_embeddings={config.max_position_embeddings}); "
                f"use at most {limit}"
            )
    check_dense_chain(config.hidden_size, parts.dense, f"the backbone's hidden_size in {path}")
    encoder = encoder_class(
        backbone,
        tokenizer,
        pooler=parts.pooler,
        mlp_only_train=parts.mlp_only_train if options.mlp_only_train is None else options.mlp_only_train,
        train_max_length=train_max_length,
        head=parts.head,
        dense=parts.dense,
        normalize_output=parts.normalize,
        seq_limit=parts.seq_limit,
        **_prompt_settings(parts.pooler, saved, options),
    )
    encoder.source = path
    return encoder


def _finish_inference(encoder: SentenceEncoder, path: str, options: LoadOptions) -> SentenceEncoder:
    if not options.for_training:
        parts = {"": encoder.backbone, "head.": encoder.head, "dense.": encoder.dense, "flow.": encoder.flow}
        check_finite(parts, path)
        encoder.check_outputs = True
    return encoder


def load_sentcl(
    name: str, folder: Path, saved: dict[str, Any], options: LoadOptions, encoder_class: type[SentenceEncoder]
) -> SentenceEncoder:
    """A folder sentcl saved (sentcl.json read by the caller, once)."""
    path = str(folder)
    loaded = _backbone(path, name, options)
    config, backbone, _, missing = loaded
    pooler = options.pooler or saved.get("pooler", POOLER)
    train_len, seq_limit = saved_lengths(saved)
    parts = Parts(
        pooler,
        dense=[read_dense(folder / d) for d in saved.get("dense", [])],
        normalize=saved.get("normalize", False),
        seq_limit=seq_limit,
        train_max_length=train_len,
        mlp_only_train=saved.get("mlp_only_train", False),
    )
    if pooler == "cls":
        if (folder / HEAD_WEIGHTS).is_file():
            parts.head = _saved_head(folder, saved, config.hidden_size)
        elif saved.get("pooler", "cls") == "cls":
            raise ModelFolderError(
                f"{folder / HEAD_WEIGHTS}: missing; {folder / SENTCL_CONFIG} says pooler 'cls', whose trained MLP "
                f"head is stored in that file (copy it back, or load with a pooler that needs no head: "
                f"{', '.join(HEADLESS_POOLERS)})"
            )
        else:
            parts.head = _cls_head_without_file(config, backbone, missing, options, path)
    elif pooler_info(pooler).prompt:
        parts.head = _prompt_head(folder, saved, config, options.for_training, path)
    encoder = _assemble(name, path, loaded, parts, options, encoder_class, saved)
    # whitening is one of the Dense layers; a flow and the fit record are loaded here
    encoder.flow, encoder.postprocess = load_flow(folder, saved), saved.get("postprocess")
    if saved.get("truncate_dim") is not None and not options.for_training:
        try:  # a Matryoshka prefix (sentcl.json "truncate_dim"); training always sees the full vector
            encoder.set_truncate_dim(saved["truncate_dim"])
        except ValueError as err:
            raise ModelFolderError(f"{folder / SENTCL_CONFIG}: {err}") from None
    return _finish_inference(encoder, path, options)


def load_st(
    name: str, folder: Path, options: LoadOptions, encoder_class: type[SentenceEncoder]
) -> SentenceEncoder:
    """A sentence-transformers folder (modules.json) that sentcl did not save."""
    path = str(folder)
    layout = read_st_folder(folder)
    backbone_path = str(folder / layout.transformer_path) if layout.transformer_path else path
    loaded = _backbone(backbone_path, name, options)
    config, backbone, _, missing = loaded
    layout.pooler = st_pooler(layout, config.hidden_size)
    pooler = options.pooler or layout.pooler
    if options.pooler is None:
        head_note = " + Dense head" if pooler == "cls" else ""
        logger.info(
            "%s: sentence-transformers folder: pooler %r (its Pooling mode %r%s)",
            path, pooler, layout.pooling_mode, head_note,
        )  # fmt: skip
    parts = Parts(
        pooler, dense=list(layout.dense), normalize=layout.normalize, seq_limit=layout.max_seq_length
    )
    if pooler == "cls":
        if layout.pooler == "cls" and parts.dense and is_head_like(parts.dense[0], config.hidden_size):
            parts.head = _head_from_dense(parts.dense.pop(0))
        else:
            parts.head = _cls_head_without_file(config, backbone, missing, options, path)
    elif pooler_info(pooler).prompt:
        parts.head = _prompt_head(folder, None, config, options.for_training, path)
    return _finish_inference(_assemble(name, path, loaded, parts, options, encoder_class), path, options)


def load_plain(
    name: str, path: str, options: LoadOptions, encoder_class: type[SentenceEncoder]
) -> SentenceEncoder:
    """A plain Hugging Face folder or hub id (no sentcl.json, no modules.json)."""
    loaded = _backbone(path, name, options)
    config, backbone, _, missing = loaded
    parts = Parts(options.pooler or POOLER)
    if parts.pooler == "cls":
        parts.head = _cls_head_without_file(config, backbone, missing, options, path)
    elif pooler_info(parts.pooler).prompt:
        parts.head = _prompt_head(Path(path), None, config, options.for_training, path)
    return _finish_inference(_assemble(name, path, loaded, parts, options, encoder_class), path, options)
