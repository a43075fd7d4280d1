"""View helpers shared by methods: duplicated views, a discretely augmented positive, token/feature augmentations,
and the sentences' own token ids as objective metadata (TSDAE's target, Contrastive Tension's second encoder)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.augment import FEATURE_AUGMENTATIONS, TEXT_AUGMENTATIONS, TOKEN_AUGMENTATIONS
from sentcl.data.collate import collate
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


#: the metadata keys of ``sentence_tokens``
SENTENCE_IDS, SENTENCE_MASK = "sentence_ids", "sentence_mask"


def sentence_tokens(
    tokenizer: PreTrainedTokenizerBase, max_length: int
) -> Callable[[Sequence[str]], dict[str, Tensor]]:
    """Batch metadata: each sentence's own token ids, as the encoder's rows are tokenised but undamaged and
    padded to ``max_length`` (one shape on every process, so that they gather): ``sentence_ids`` and
    ``sentence_mask``, (B, max_length) each. ``trim_tokens`` cuts them back to the batch's longest row."""

    def meta(examples: Sequence[str]) -> dict[str, Tensor]:
        rows = collate([(e,) for e in examples], tokenizer, max_length)  # (B, L) each, L <= max_length
        pad = max_length - rows["input_ids"].size(1)
        ids = torch.nn.functional.pad(rows["input_ids"], (0, pad), value=tokenizer.pad_token_id or 0)
        mask = torch.nn.functional.pad(rows["attention_mask"], (0, pad), value=0)
        return {SENTENCE_IDS: ids, SENTENCE_MASK: mask}  # (B, max_length) each

    return meta


def trim_tokens(ids: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """``sentence_tokens``' rows (B, max_length) cut to the longest real row: (B, L) each."""
    length = max(int(mask.sum(dim=1).max()), 1)
    return ids[:, :length], mask[:, :length]
