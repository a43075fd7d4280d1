"""View helpers shared by methods: duplicated views, a discretely augmented positive, token/feature augmentations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.augment import FEATURE_AUGMENTATIONS, TEXT_AUGMENTATIONS, TOKEN_AUGMENTATIONS
from sentcl.methods.base import EmbeddingAugment, TokenAugment, ViewFn

#: the values of data.token_augmentation: ConSERT's feature and token augmentations
TOKEN_AUGMENTATION_NAMES = tuple(sorted([*FEATURE_AUGMENTATIONS.names(), *TOKEN_AUGMENTATIONS.names()]))


def duplicate_view(num_views: int = 2) -> ViewFn:
    """Unsupervised SimCSE's views: the same sentence V times (dropout makes them differ)."""

    def views(sentence: str) -> tuple[str, ...]:
        return (sentence,) * num_views

    return views


def positive_view_augmented(augment: Callable[[str], str]) -> ViewFn:
    """(s, aug(s)): a discrete augmentation of the positive view (the paper's Table 1)."""

    def views(sentence: str) -> tuple[str, str]:
        return sentence, augment(sentence)

    return views


def text_augmentation(cfg: TrainConfig) -> Callable[[str], str] | None:
    """``data.augmentation`` built with its options (the name is checked by sentcl.training.validation)."""
    d = cfg.data
    if d.augmentation is None:
        return None
    if d.augmentation == "delete_one_word":
        return TEXT_AUGMENTATIONS.build(d.augmentation, seed=cfg.training.seed)
    kwargs: dict[str, Any] = {"k": d.augmentation_rate, "seed": cfg.training.seed}
    if d.augmentation == "synonym_replacement":
        kwargs["wordnet"] = d.wordnet_dir
    if d.augmentation == "mlm_replacement":
        kwargs = {"k": d.augmentation_rate, "model": d.mlm_augmentation_model or cfg.model.name_or_path}
        kwargs["generator"] = torch.Generator().manual_seed(cfg.training.seed)
    return TEXT_AUGMENTATIONS.build(d.augmentation, **kwargs)


def token_augmentation(
    cfg: TrainConfig, tokenizer: PreTrainedTokenizerBase
) -> tuple[TokenAugment | None, EmbeddingAugment | None]:
    """``data.token_augmentation`` built with its options: (token augmentation, None) or (None, feature
    augmentation); the name is checked by sentcl.training.validation."""
    d = cfg.data
    name, rate, seed = d.token_augmentation, d.token_augmentation_rate, cfg.training.seed
    if name is None:
        return None, None
    if name in FEATURE_AUGMENTATIONS:
        return None, FEATURE_AUGMENTATIONS.build(name, rate=rate, generator=seed)
    if name == "token_shuffle":
        return TOKEN_AUGMENTATIONS.build(name, tokenizer=tokenizer, generator=seed), None
    return TOKEN_AUGMENTATIONS.build(
        name, rate=rate, tokenizer=tokenizer, replace_with=d.cutoff_token, generator=seed
    ), None
