"""SimCSE Table 2's "next sentence" positives: s_(i+1), or one of the next three sentences."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method
from sentcl.methods.next_sentence.options import NextSentenceOptions
from sentcl.objectives.infonce import InfoNCE


def build(
    cfg: TrainConfig, o: NextSentenceOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase
) -> Method:
    """SimCSE Table 2: the positive of s_i is s_(i+1) ("next sentence") or one of the next three
    (``data.next_sentence_window=3``); one encoder, or f for s_i and g for the positive (``model.two_encoders``)."""
    from sentcl.data.ordered import NextSentenceViews

    return Method(
        views=NextSentenceViews(cfg.data.next_sentence_window, cfg.training.seed),
        objective=InfoNCE(o.temperature),
        examples=corpus.examples,
        # with model.two_encoders: f encodes the sentence s_i, g its positive (a nearby sentence)
        view_encoders=("f", "g"),
    )
