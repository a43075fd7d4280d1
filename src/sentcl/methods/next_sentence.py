"""SimCSE Table 2's "next sentence" positives: s_(i+1), or one of the next three sentences."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.readers import Corpus
from sentcl.methods.base import TWO_ENCODER_KEYS, Method, TemperatureOptions, register_method
from sentcl.objectives.infonce import InfoNCE


@dataclass
class NextSentenceOptions(TemperatureOptions):
    uses: ClassVar[tuple[str, ...]] = ("data.next_sentence_window", *TWO_ENCODER_KEYS)


@register_method("next_sentence", reader="next_sentence", options=NextSentenceOptions)
def next_sentence(cfg: TrainConfig, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """SimCSE Table 2: the positive of s_i is s_(i+1) ("next sentence") or one of the next three
    (``data.next_sentence_window=3``); one encoder, or f for s_i and g for the positive (``model.two_encoders``)."""
    from sentcl.data.ordered import NextSentenceViews

    o: NextSentenceOptions = cfg.objective  # type: ignore[assignment]
    return Method(
        views=NextSentenceViews(cfg.data.next_sentence_window, cfg.training.seed),
        objective=InfoNCE(o.temperature),
        examples=corpus.examples,
    )
