"""Augmentations that make the views of contrastive learning, by level: text, tokens, features.

Each augmentation is a callable registered by name (``TEXT_AUGMENTATIONS``, ``TOKEN_AUGMENTATIONS``,
``FEATURE_AUGMENTATIONS``) so a config can build it with keyword arguments, e.g.
``TEXT_AUGMENTATIONS.build("crop", k=0.1, seed=0)``. :class:`Views` turns per-view callables into one
callable that returns the tuple of views (MoCo's TwoCropsTransform): SimCSE's unsupervised views are
``Views([None, None])`` (two identical copies; dropout makes them differ).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sentcl.data.augment.features import (
    FEATURE_AUGMENTATIONS,
    FeatureCutoff,
    TokenCutoffEmbeddings,
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


class Views:
    """x -> (t_1(x), ..., t_V(x)); a None transform is the identity (returns its argument(s) unchanged)."""

    def __init__(self, transforms: Sequence[Callable[..., Any] | None]) -> None:
        if not transforms:
            raise ValueError("Views needs at least one transform (None for the identity)")
        self.transforms = list(transforms)

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        identity = args[0] if len(args) == 1 else args
        return tuple(identity if t is None else t(*args) for t in self.transforms)

    def __len__(self) -> int:
        return len(self.transforms)


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
    "TokenCutoffEmbeddings",
    "TokenShuffle",
    "TokenView",
    "Views",
    "WordDeletion",
    "WordNet",
    "WordNetFormatError",
    "WordNetNotFoundError",
    "change_count",
    "change_counts",
    "input_embeddings",
    "real_token_mask",
]
