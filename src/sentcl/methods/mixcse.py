"""MixCSE (Zhang et al. 2022, AAAI): unsupervised SimCSE plus detached mixed hard negatives."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.config.method_options import MixCSEOptions
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method, register_method
from sentcl.methods.views import duplicate_view
from sentcl.objectives.mixcse import MixCSELoss


@register_method("mixcse")
def mixcse(cfg: TrainConfig, o: MixCSEOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """MixCSE: (s, s) with independent dropout masks; InfoNCE whose denominator also holds mixed negatives."""
    return Method(
        views=duplicate_view(2),
        objective=MixCSELoss(o.temperature, o.mix_lambda, o.mix_partners),
        examples=corpus.examples,
        views_are_copies=True,
    )
