"""Unsupervised SimCSE (Gao et al. 2021): (s, s) with independent dropout masks, InfoNCE with in-batch negatives."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method
from sentcl.methods.unsup_simcse.options import UnsupSimCSEOptions
from sentcl.methods.views import (
    duplicate_view,
    positive_view_augmented,
    text_augmentation,
    token_augmentation,
)
from sentcl.objectives.infonce import InfoNCE


def build(
    cfg: TrainConfig, o: UnsupSimCSEOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase
) -> Method:
    """Gao et al. 2021, unsupervised: (s, s) with independent dropout masks, InfoNCE with in-batch negatives.

    Ablations: ``data.augmentation`` (a discrete augmentation of the positive view), ``data.token_augmentation``
    (ConSERT's token shuffle / token cutoff / span cutoff / feature cutoff), ``model.same_dropout_mask``,
    ``objective.similarity=dot``; ``objective.symmetric`` is a symmetric 2N x 2N loss over all views (not the paper's eq. 1).
    """
    text_aug = text_augmentation(cfg)
    token_aug, embedding_aug = token_augmentation(cfg, tokenizer)
    return Method(
        views=positive_view_augmented(text_aug) if text_aug else duplicate_view(2),
        objective=InfoNCE(o.temperature, o.similarity, o.symmetric),
        examples=corpus.examples,
        token_augment=[None, token_aug] if token_aug else None,
        embedding_augment=[None, embedding_aug] if embedding_aug else None,
        share_dropout_mask=cfg.model.same_dropout_mask,
        stochastic=[a for a in (text_aug, token_aug, embedding_aug) if a is not None],
        views_are_copies=text_aug is None,
        # with model.two_encoders (the SimCSE paper's "two encoders" ablation): f encodes the anchor, g the positive
        view_encoders=("f", "g"),
    )
