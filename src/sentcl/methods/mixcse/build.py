"""MixCSE (Zhang et al. 2022, AAAI): unsupervised SimCSE plus detached mixed hard negatives."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method
from sentcl.methods.mixcse.loss import MixCSELoss
from sentcl.methods.mixcse.options import MixCSEOptions
from sentcl.methods.views import duplicate_view


def build(cfg: TrainConfig, o: MixCSEOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """MixCSE: (s, s) with independent dropout masks; InfoNCE whose denominator also holds mixed negatives."""
    return Method(
        views=duplicate_view(2),
        objective=MixCSELoss(o.temperature, o.mix_lambda, o.mix_partners),
        examples=corpus.examples,
        views_are_copies=True,
    )
