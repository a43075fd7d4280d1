"""Contrastive Tension (Carlsson et al. 2021), in-batch negatives: f and its copy g read the same sentence."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method
from sentcl.methods.contrastive_tension.loss import ContrastiveTension
from sentcl.methods.contrastive_tension.options import ContrastiveTensionOptions
from sentcl.methods.views import duplicate_view, sentence_tokens


def build(
    cfg: TrainConfig, o: ContrastiveTensionOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase
) -> Method:
    """One view per sentence through f (the saved encoder); the same token ids go to g (``attach`` builds it as
    a copy of f when training starts; it is kept in ``training_state.pt`` for resuming, not in the model)."""
    return Method(
        views=duplicate_view(1),
        objective=ContrastiveTension(o.scale, o.learn_scale, o.similarity),
        examples=corpus.examples,
        meta=sentence_tokens(tokenizer, cfg.model.max_length),
        views_are_copies=True,
    )
