"""Supervised SimCSE (Gao et al. 2021): (premise, entailment, contradiction[, neutral]) triples, eq. 5."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.readers import Corpus
from sentcl.methods.base import (
    Method,
    check_examples,
)
from sentcl.methods.sup_simcse.options import SupSimCSEOptions
from sentcl.objectives.supervised import SupervisedInfoNCE


def build(
    cfg: TrainConfig, o: SupSimCSEOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase
) -> Method:
    """Gao et al. 2021, supervised: (premise, entailment, contradiction[, neutral]) triples, eq. 5."""
    views = 4 if cfg.data.use_neutral else 3
    check_examples(
        corpus,
        lambda example: isinstance(example, tuple) and len(example) >= views,
        "sup_simcse",
        f"(premise, entailment, contradiction{', neutral' if views == 4 else ''})",
        "check data.reader / data.use_neutral",
    )
    return Method(
        views=lambda example: tuple(example[:views]),
        objective=SupervisedInfoNCE(
            o.temperature, o.hard_negative_weight, views - 2, similarity=o.similarity
        ),
        examples=corpus.examples,
    )
