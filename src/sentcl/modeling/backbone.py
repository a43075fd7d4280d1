"""A Hugging Face backbone loaded for sentcl: its weight and tokenizer files checked first, transformers' own
loading report silenced, weights whose shape differs from config.json refused naming both shapes, every weight
checked finite, and BERT's own pooler (dense + tanh) taken as the MLP head where a folder has no other."""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def _check_mismatched(folder: str, config: Any, mismatched: Any) -> None:
    """Weights whose shape differs from what config.json builds: an error naming both shapes."""
    if not mismatched:
        return
    key, saved, built = sorted(mismatched)[0]
    # the config.json sizes behind the built shape that the saved shape lacks (e.g. hidden_size=768)
    sizes = [
        f"{attr}={value}"
        for attr in _SIZE_KEYS
        if isinstance(value := getattr(config, attr, None), int) and value in built and value not in saved
    ]
    raise ModelFolderError(
        f"{Path(folder) / 'config.json'}: does not match the weights: {key} is {tuple(saved)} in the weights "
        f"file but {tuple(built)} for config.json ({', '.join(sizes) or 'its sizes'})"
        + (f"; {len(mismatched) - 1} more tensor(s) differ" if len(mismatched) > 1 else "")
    )


def load_backbone(path: str, name: str, dropout: float | None) -> tuple[Any, nn.Module, Any, set[str]]:
    """(config, backbone, tokenizer, missing weight names) of a folder or hub id; weights checked first."""
    folder = Path(path)
    if folder.is_dir() and (folder / "config.json").is_file():
        check_tokenizer_files(folder)
        check_weight_files(folder)
    try:
        config = AutoConfig.from_pretrained(path)
        if dropout is not None:
            set_dropout(config, dropout)
        with _quiet_transformers():
            backbone, info = AutoModel.from_pretrained(
                path, config=config, output_loading_info=True, ignore_mismatched_sizes=True
            )
        tokenizer = AutoTokenizer.from_pretrained(path)
    except OSError as err:
        raise model_load_error(name, err) from err
    _check_mismatched(path, config, info.get("mismatched_keys"))
    vocab = getattr(config, "vocab_size", None)
    if isinstance(vocab, int) and len(tokenizer) < min(vocab, 20):
        raise ModelFolderError(
            f"{path}: the tokenizer has only {len(tokenizer)} tokens while config.json says vocab_size={vocab}: "
            "its vocabulary file is missing or empty"
        )
    return config, backbone, tokenizer, set(info.get("missing_keys", ()))


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
