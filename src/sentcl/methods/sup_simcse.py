"""Supervised SimCSE (Gao et al. 2021): (premise, entailment, contradiction[, neutral]) triples, eq. 5."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig, opt
from sentcl.data.readers import Corpus
from sentcl.methods.base import (
    Method,
    TemperatureOptions,
    check_examples,
    check_similarity,
    register_method,
    similarity_option,
)
from sentcl.objectives.supervised import SupervisedInfoNCE


@dataclass
class SupSimCSEOptions(TemperatureOptions):
    hard_negative_weight: float = opt(
        0.0, "w added to the logit of the anchor's own hard negative (alpha = e^w; 0 is alpha = 1)."
    )
    similarity: str = similarity_option()

    uses: ClassVar[tuple[str, ...]] = ("data.use_neutral",)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_similarity(self)


@register_method("sup_simcse", reader="nli_csv", options=SupSimCSEOptions)
def sup_simcse(cfg: TrainConfig, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """Gao et al. 2021, supervised: (premise, entailment, contradiction[, neutral]) triples, eq. 5."""
    o: SupSimCSEOptions = cfg.objective  # type: ignore[assignment]
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
