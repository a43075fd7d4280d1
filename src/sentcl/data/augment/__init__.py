"""Augmentations that make the views of contrastive learning, by level: text, tokens, features.

Each augmentation is a callable registered by name (``TEXT_AUGMENTATIONS``, ``TOKEN_AUGMENTATIONS``,
``FEATURE_AUGMENTATIONS``) so a config can build it with keyword arguments, e.g.
``TEXT_AUGMENTATIONS.build("crop", k=0.1, seed=0)``. ``MaskedLMReplacement`` is not registered at the token
level: it serves the text-level ``mlm_replacement`` (text.MLMReplacement), the one a config can name.
"""

from __future__ import annotations

from sentcl.data.augment.features import (
    FEATURE_AUGMENTATIONS,
    FeatureCutoff,
    input_embeddings,
)
from sentcl.data.augment.text import (
    TEXT_AUGMENTATIONS,
    Crop,
    DeleteOneWord,
    MLMReplacement,
    SynonymReplacement,
    TextAugmentation,
    WordDeletion,
    change_count,
)
from sentcl.data.augment.tokens import (
    TOKEN_AUGMENTATIONS,
    MaskedLMReplacement,
    SpanCutoff,
    SpecialIds,
    TokenAugmentation,
    TokenCutoff,
    TokenShuffle,
    TokenView,
    change_counts,
    real_token_mask,
)
from sentcl.data.augment.wordnet import WordNet, WordNetFormatError, WordNetNotFoundError

__all__ = [
    "FEATURE_AUGMENTATIONS",
    "TEXT_AUGMENTATIONS",
    "TOKEN_AUGMENTATIONS",
    "Crop",
    "DeleteOneWord",
    "FeatureCutoff",
    "MLMReplacement",
    "MaskedLMReplacement",
    "SpanCutoff",
    "SpecialIds",
    "SynonymReplacement",
    "TextAugmentation",
    "TokenAugmentation",
    "TokenCutoff",
    "TokenShuffle",
    "TokenView",
    "WordDeletion",
    "WordNet",
    "WordNetFormatError",
    "WordNetNotFoundError",
    "change_count",
    "change_counts",
    "input_embeddings",
    "real_token_mask",
]
