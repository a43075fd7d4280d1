"""TSDAE (Wang, Reimers and Gurevych 2021): delete 60% of each sentence's tokens, encode, decode the original."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.augment import TOKEN_AUGMENTATIONS
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method
from sentcl.methods.tsdae.loss import TSDAELoss
from sentcl.methods.tsdae.options import TSDAEOptions
from sentcl.methods.views import duplicate_view, sentence_tokens


def build(cfg: TrainConfig, o: TSDAEOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """One view per sentence: its tokens with ``deletion_ratio`` of the real ones removed (count-based,
    round(0.6 n), at least one kept; the rest shift left). The undamaged token ids ride along as the
    objective's metadata, the decoder's target.

    Our reading: the deletion acts on the tokenizer's word pieces, as the paper speaks of deleting tokens;
    sentence-transformers' example deletes whole words (each kept with probability 0.4)."""
    deletion = None
    if o.deletion_ratio > 0:
        deletion = TOKEN_AUGMENTATIONS.build(
            "token_cutoff",
            rate=o.deletion_ratio,
            tokenizer=tokenizer,
            replace_with="remove",
            generator=cfg.training.seed,
        )
    return Method(
        views=duplicate_view(1),
        objective=TSDAELoss(cfg.model.name_or_path, o.tie_encoder_decoder, cfg.model.pooler is not None),
        examples=corpus.examples,
        token_augment=[deletion] if deletion is not None else None,
        stochastic=[deletion] if deletion is not None else [],
        meta=sentence_tokens(tokenizer, cfg.model.max_length),
        views_are_copies=True,
    )
