"""A Hugging Face backbone loaded for sentcl: its weight and tokenizer files checked first, transformers' own
loading report silenced, weights whose shape differs from config.json refused naming both shapes, every weight
checked finite, and BERT's own pooler (dense + tanh) taken as the MLP head where a folder has no other."""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import nn
from transformers import AutoConfig, AutoModel, AutoTokenizer
from transformers.utils import logging as hf_logging

from sentcl.config.poolers import HEADLESS_POOLERS
from sentcl.files.paths import ModelFolderError, model_load_error
from sentcl.modeling.folder_layout import HEAD_WEIGHTS, set_dropout
from sentcl.modeling.heads import MLPHead
from sentcl.modeling.weights import check_tokenizer_files, check_weight_files

logger = logging.getLogger("sentcl")


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """transformers' own loading report lists weights it initialised; sentcl checks those itself."""
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


_SIZE_KEYS = ("hidden_size", "intermediate_size", "vocab_size", "max_position_embeddings", "type_vocab_size")


def _mismatch_error(folder: str, config: Any, mismatched: Any) -> ModelFolderError:
    """Weights whose shape differs from what config.json builds: an error naming both shapes."""
    key, saved, built = sorted(mismatched)[0]
    # the config.json sizes behind the built shape that the saved shape lacks (e.g. hidden_size=768)
    sizes = [
        f"{attr}={value}"
        for attr in _SIZE_KEYS
        if isinstance(value := getattr(config, attr, None), int) and value in built and value not in saved
    ]
    return ModelFolderError(
        f"{Path(folder) / 'config.json'}: does not match the weights: {key} is {tuple(saved)} in the weights "
        f"file but {tuple(built)} for config.json ({', '.join(sizes) or 'its sizes'})"
        + (f"; {len(mismatched) - 1} more tensor(s) differ" if len(mismatched) > 1 else "")
    )


class Backbone(NamedTuple):
    """A loaded backbone: its config, the model, its tokenizer and the weight names the files lacked."""

    config: Any
    model: nn.Module
    tokenizer: Any
    missing: set[str]


def load_backbone(path: str, name: str, dropout: float | None, for_training: bool = True) -> Backbone:
    """The backbone of a folder or hub id, its files checked first, transformers' own report silenced. At
    inference (``for_training=False``) no weight may be missing from the folder (but BERT's own pooler): it
    would be random."""
    folder = Path(path)
    with _quiet_transformers():
        if folder.is_dir() and (folder / "config.json").is_file():
            check_tokenizer_files(folder)
            check_weight_files(folder)
        try:
            config = AutoConfig.from_pretrained(path)
            if dropout is not None:
                set_dropout(config, dropout)
            backbone, info = AutoModel.from_pretrained(
                path, config=config, output_loading_info=True, ignore_mismatched_sizes=True
            )
            tokenizer = AutoTokenizer.from_pretrained(path)
        except OSError as err:
            raise model_load_error(name, err) from err
    if info.get("mismatched_keys"):
        raise _mismatch_error(path, config, info["mismatched_keys"])
    vocab = getattr(config, "vocab_size", None)
    if isinstance(vocab, int) and len(tokenizer) < min(vocab, 20):
        raise ModelFolderError(
            f"{path}: the tokenizer has only {len(tokenizer)} tokens while config.json says vocab_size={vocab}: "
            "its vocabulary file is missing or empty"
        )
    missing = set(info.get("missing_keys", ()))
    lost: list[str] = []
    for key in sorted(missing) if not for_training else ():
        if not key.startswith("pooler."):
            lost.append(key)
    if lost:
        raise ModelFolderError(
            f"{path}: weights missing from the folder, which would be random: {', '.join(lost[:5])}"
            + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
        )
    return Backbone(config, backbone, tokenizer, missing)


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
