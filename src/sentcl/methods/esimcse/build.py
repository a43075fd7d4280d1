"""ESimCSE (Wu et al. 2022): a word-repetition positive, and a queue of momentum-encoded negatives."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.augment.repetition import WordRepetition
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method
from sentcl.methods.esimcse.loss import ESimCSELoss
from sentcl.methods.esimcse.options import ESimCSEOptions
from sentcl.methods.momentum import MomentumQueue
from sentcl.methods.views import positive_view_augmented


def queue_size(o: ESimCSEOptions, batch_size: int) -> int:
    """Sentences in the negative queue: queue_factor x the batch size."""
    return int(round(o.queue_factor * batch_size))


def build(cfg: TrainConfig, o: ESimCSEOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """ESimCSE: views (s, repeat(s)), InfoNCE with the momentum encoder's queue in the denominator.

    The momentum encoder and its queue are the method's companion (:mod:`sentcl.methods.momentum`): they
    live beside the model, are saved in ``training_state.pt`` and are not part of the saved model.
    """
    repeat = WordRepetition(o.dup_rate, seed=cfg.training.seed)
    return Method(
        views=positive_view_augmented(repeat),
        objective=ESimCSELoss(o.temperature),
        examples=corpus.examples,
        stochastic=[repeat],
        companion=MomentumQueue(o.momentum, queue_size(o, cfg.training.batch_size)),
    )
