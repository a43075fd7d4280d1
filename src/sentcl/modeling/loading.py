"""Loading a SentenceEncoder from any kind of folder, never with an untrained part at inference.

- A sentcl folder (``sentcl.json``): its pooler, MLP head (``sentcl_head.safetensors``), Dense layers and
  normalisation; a missing or malformed part is an error naming the file.
- A sentence-transformers folder (``modules.json``): its Pooling, Dense and Normalize modules and its
  ``max_seq_length`` (interop/sentence_transformers.py), so that embeddings equal ``SentenceTransformer``'s.
- A plain Hugging Face folder: pooler ``cls`` at inference uses the backbone's own pooler (BERT's
  ``pooler.dense`` + tanh, where the official SimCSE checkpoints keep their trained MLP), as SimCSE's
  ``evaluation.py --pooler cls`` does; without trained pooler weights it is an error naming the poolers that
  need no head.

For training (``for_training=True``) a missing head is new, initialised as the SimCSE reference does:
normal(0, ``initializer_range``), bias 0. At inference the weights must be finite, and the backbone must
have every weight (a missing one would be random).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file
from torch import nn
from transformers import AutoConfig, AutoModel, AutoTokenizer
from transformers.utils import logging as hf_logging

from sentcl.config import ConfigError
from sentcl.files import read_json
from sentcl.interop.sentence_transformers import (
    STLayout,
    is_head_like,
    is_st_folder,
    read_dense,
    read_st_folder,
    st_pooler,
)
from sentcl.modeling.encoder import HEAD_WEIGHTS, SENTCL_CONFIG, SentenceEncoder, set_dropout
from sentcl.modeling.heads import ACTIVATIONS, DenseLayer, MLPHead
from sentcl.modeling.pooling import HEADLESS_POOLERS, POOLERS, pooler_spec
from sentcl.modeling.prompt import DENOISE_MODES, PROMPTBERT_BERT_TEMPLATES, check_template
from sentcl.paths import ModelFolderError, model_load_error, resolve_model_path
from sentcl.postprocess.storage import check_postprocess_meta, load_flow

logger = logging.getLogger("sentcl")

TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "sentencepiece.model",
    "tokenizer.model",
)
# model types whose position ids start after the padding index (RoBERTa's offset of pad_token_id + 1)
_PADDING_OFFSET_TYPES = frozenset({"roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text"})


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
    _check_type(file, meta, "max_length", positive_int(get("max_length")), "a positive whole number")
    _check_type(
        file,
        meta,
        "inference_max_length",
        positive_int(get("inference_max_length")),
        "a positive whole number",
    )
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


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """transformers' own loading report lists weights it initialised; sentcl checks those itself."""
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


def load_backbone(path: str, name: str, dropout: float | None) -> tuple[Any, nn.Module, Any, set[str]]:
    """(config, backbone, tokenizer, missing weight names) of a folder or hub id."""
    folder = Path(path)
    has_tokenizer = any((folder / f).is_file() for f in TOKENIZER_FILES)
    if folder.is_dir() and (folder / "config.json").is_file() and not has_tokenizer:
        raise ModelFolderError(
            f"{folder}: no tokenizer files (none of {', '.join(TOKENIZER_FILES)}); copy the tokenizer "
            "files of the model it was trained from into this folder"
        )
    try:
        config = AutoConfig.from_pretrained(path)
        if dropout is not None:
            set_dropout(config, dropout)
        with _quiet_transformers():
            backbone, info = AutoModel.from_pretrained(path, config=config, output_loading_info=True)
        tokenizer = AutoTokenizer.from_pretrained(path)
    except OSError as err:
        raise model_load_error(name, err) from err
    vocab = getattr(config, "vocab_size", None)
    if isinstance(vocab, int) and len(tokenizer) < min(vocab, 20):
        raise ModelFolderError(
            f"{path}: the tokenizer has only {len(tokenizer)} tokens while config.json says vocab_size={vocab}: "
            "its vocabulary file is missing or empty"
        )
    return config, backbone, tokenizer, set(info.get("missing_keys", ()))


def position_limit(config: Any) -> int | None:
    """The most tokens the backbone can take: max_position_embeddings, less RoBERTa's padding offset."""
    positions = getattr(config, "max_position_embeddings", None)
    if not isinstance(positions, int) or positions <= 0:
        return None
    if getattr(config, "model_type", "") in _PADDING_OFFSET_TYPES:
        positions -= (getattr(config, "pad_token_id", None) or 0) + 1
    return positions


def check_finite(parts: dict[str, nn.Module | None], where: str) -> None:
    """Every floating weight and buffer finite, else an error naming the first bad tensor."""
    for prefix, module in parts.items():
        if module is None:
            continue
        for name, t in itertools.chain(module.named_parameters(), module.named_buffers()):
            if t.is_floating_point() and not bool(torch.isfinite(t).all()):
                bad = int((~torch.isfinite(t)).sum())
                raise ModelFolderError(
                    f"{where}: weight {prefix}{name} has {bad} non-finite values (NaN or inf) out of "
                    f"{t.numel()}; the model cannot give meaningful embeddings (saved from a diverged run?)"
                )


def backbone_pooler_head(backbone: nn.Module, missing: set[str], where: str) -> MLPHead:
    """The backbone's own pooler (dense + tanh over [CLS]) as an MLPHead with its weights."""
    pooler = getattr(backbone, "pooler", None)
    dense = getattr(pooler, "dense", None)
    hidden = backbone.config.hidden_size
    if pooler is None or not isinstance(dense, nn.Linear):
        reason = f"the backbone ({type(backbone).__name__}) has no pooler"
    elif any(k.startswith("pooler.") for k in missing):
        reason = "its weights hold no pooler (pooler.dense is missing)"
    elif not isinstance(getattr(pooler, "activation", None), nn.Tanh) or dense.weight.shape != (
        hidden,
        hidden,
    ):
        reason = f"its pooler ({type(pooler).__name__}) is not a dense layer with tanh"
    else:
        head = MLPHead(hidden)
        head.dense.load_state_dict(dense.state_dict())
        logger.info("%s: pooler cls uses the backbone's own pooler (pooler.dense + tanh)", where)
        return head
    raise ModelFolderError(
        f"{where}: pooler 'cls' needs a trained MLP head and this folder has none (no {HEAD_WEIGHTS}, no "
        f"sentence-transformers Dense module, and {reason}); use a pooler that needs no head: "
        f"{', '.join(HEADLESS_POOLERS)} (--pooler / model.pooler)"
    )


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
        head = MLPHead(config.hidden_size, activation=saved.get("head_activation", "tanh"))
        head.load_state_dict(load_file(str(head_file)))
        return head
    if saved is not None and "head_activation" in saved:
        raise ModelFolderError(f"{head_file}: missing; {folder / SENTCL_CONFIG} names a trained MLP head")
    if for_training:
        std = float(getattr(config, "initializer_range", 0.02))
        logger.info("%s: new MLP head over [MASK], normal(0, %g), bias 0", where, std)
        return MLPHead(config.hidden_size, init_std=std)
    return None


def _prompt_settings(
    pooler: str, saved: dict[str, Any] | None, prompt: list[str] | None, denoise: str | None
) -> dict[str, Any]:
    """PromptBERT's templates: the arguments', else the folder's (sentcl.json "prompt"); none unless the
    pooler reads a template."""
    if not pooler_spec(pooler).prompt:
        return {}
    stored = (saved or {}).get("prompt") or {}
    templates = prompt or stored.get("templates") or list(PROMPTBERT_BERT_TEMPLATES)
    return {
        "prompt": templates,
        "prompt_denoise": stored.get("denoise", "train") if denoise is None else denoise,
    }


def load_pretrained(
    name_or_path: str,
    pooler: str | None = None,
    mlp_only_train: bool | None = None,
    max_length: int | None = None,
    dropout: float | None = None,
    for_training: bool = False,
    prompt: list[str] | None = None,
    prompt_denoise: str | None = None,
) -> SentenceEncoder:
    """See the module docstring; arguments override what the folder says."""
    path = resolve_model_path(name_or_path)
    folder = Path(path)
    saved = read_sentcl_json(folder) if folder.is_dir() else None
    st_folder = saved is None and folder.is_dir() and is_st_folder(folder)
    layout: STLayout | None = read_st_folder(folder) if st_folder else None
    backbone_path = str(folder / layout.transformer_path) if layout and layout.transformer_path else path
    config, backbone, tokenizer, missing = load_backbone(backbone_path, name_or_path, dropout)
    hidden = config.hidden_size
    if layout is not None:
        layout.pooler = st_pooler(layout, hidden)
    lost = sorted(k for k in missing if not k.startswith("pooler."))
    if lost and not for_training:
        raise ModelFolderError(
            f"{path}: weights missing from the folder, which would be random: {', '.join(lost[:5])}"
            + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
        )

    if pooler is None:
        pooler = saved.get("pooler", "cls") if saved else (layout.pooler if layout else "cls")
        if layout is not None:
            logger.info(
                "%s: sentence-transformers folder: pooler %r (its Pooling mode %r%s)",
                path,
                pooler,
                layout.pooling_mode,
                " + Dense head" if pooler == "cls" else "",
            )
    if saved is not None:
        dense = [read_dense(folder / d) for d in saved.get("dense", [])]
        normalize, seq_limit = saved.get("normalize", False), saved.get("inference_max_length")
    elif layout is not None:
        dense, normalize, seq_limit = list(layout.dense), layout.normalize, layout.max_seq_length
    else:
        dense, normalize, seq_limit = [], False, None

    head = None
    if pooler == "cls":
        head_file = folder / HEAD_WEIGHTS
        if layout is not None and layout.pooler == "cls" and dense and is_head_like(dense[0], hidden):
            head = _head_from_dense(dense.pop(0))
        elif saved is not None and head_file.is_file():
            head = MLPHead(hidden, activation=saved.get("head_activation", "tanh"))
            head.load_state_dict(load_file(str(head_file)))
        elif saved is not None and saved.get("pooler", "cls") == "cls":
            raise ModelFolderError(
                f"{head_file}: missing; {folder / SENTCL_CONFIG} says pooler 'cls', whose trained MLP head "
                f"is stored in that file (copy it back, or load with a pooler that needs no head: "
                f"{', '.join(HEADLESS_POOLERS)})"
            )
        elif for_training:
            std = float(getattr(config, "initializer_range", 0.02))
            head = MLPHead(hidden, init_std=std)
            logger.info("%s: new MLP head over [CLS], normal(0, %g), bias 0", path, std)
        else:
            head = backbone_pooler_head(backbone, missing, path)
    elif pooler_spec(pooler).prompt:
        head = _prompt_head(folder, saved, config, for_training, path)

    limit = position_limit(config)
    max_length = max_length or (saved or {}).get("max_length", 32)
    for value, source in ((max_length, "max_length"), (seq_limit, "inference max_seq_length")):
        if limit is not None and value is not None and value > limit:
            raise ConfigError(
                f"{source}={value} is above the position limit of model {name_or_path} ({limit} tokens, from "
                f"its config.json max_position_embeddings={config.max_position_embeddings}); "
                f"use at most {limit}"
            )
    encoder = SentenceEncoder(
        backbone,
        tokenizer,
        pooler=pooler,
        mlp_only_train=(saved or {}).get("mlp_only_train", False)
        if mlp_only_train is None
        else mlp_only_train,
        max_length=max_length,
        head=head,
        dense=dense,
        normalize_output=normalize,
        seq_limit=seq_limit,
        **_prompt_settings(pooler, saved, prompt, prompt_denoise),
    )
    encoder.source = path
    if saved is not None:  # whitening is one of the Dense layers; a flow and the fit record are loaded here
        encoder.flow, encoder.postprocess = load_flow(folder, saved), saved.get("postprocess")
    if saved is not None and saved.get("truncate_dim") is not None and not for_training:
        try:  # a Matryoshka prefix (sentcl.json "truncate_dim"); training always sees the full vector
            encoder.set_truncate_dim(saved["truncate_dim"])
        except ValueError as err:
            raise ModelFolderError(f"{folder / SENTCL_CONFIG}: {err}") from None
    if not for_training:
        check_finite(
            {"": backbone, "head.": head, "dense.": nn.ModuleList(dense), "flow.": encoder.flow}, path
        )
        encoder.check_outputs = True
    return encoder
