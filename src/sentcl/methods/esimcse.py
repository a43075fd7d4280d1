"""ESimCSE (Wu et al. 2022): a word-repetition positive, and a queue of momentum-encoded negatives."""

from __future__ import annotations

from dataclasses import dataclass

from transformers import PreTrainedTokenizerBase

from sentcl.config import ConfigError, TrainConfig, opt
from sentcl.data.augment.repetition import WordRepetition
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method, TemperatureOptions, register_method
from sentcl.methods.momentum import MomentumQueue
from sentcl.methods.views import positive_view_augmented
from sentcl.objectives.esimcse import ESimCSELoss


@dataclass
class ESimCSEOptions(TemperatureOptions):
    dup_rate: float = opt(
        0.32,
        "Maximum word-repetition rate: the positive view repeats dup_len ~ U{0..max(2, int(dup_rate * n))} "
        "of its n words in place (the paper's BERT-base value 0.32).",
    )
    momentum: float = opt(0.995, "Momentum m of the momentum encoder: theta_m <- m theta_m + (1 - m) theta.")
    queue_factor: float = opt(
        2.5,
        "Queue of momentum-encoded negatives of queue_factor x training.batch_size sentences (the paper: "
        "2.5; 0 disables the queue).",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.dup_rate <= 1.0:
            raise ConfigError(f"objective.dup_rate must be in [0, 1], got {self.dup_rate!r}")
        if not 0.0 <= self.momentum < 1.0:
            raise ConfigError(f"objective.momentum must be in [0, 1), got {self.momentum!r}")
        if self.queue_factor < 0:
            raise ConfigError(f"objective.queue_factor must be >= 0, got {self.queue_factor!r}")


def queue_size(cfg: TrainConfig) -> int:
    o: ESimCSEOptions = cfg.objective  # type: ignore[assignment]
    return int(round(o.queue_factor * cfg.training.batch_size))


@register_method("esimcse", reader="lines", options=ESimCSEOptions)
def esimcse(cfg: TrainConfig, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """ESimCSE: views (s, repeat(s)), InfoNCE with the momentum encoder's queue in the denominator.

    The momentum encoder and its queue are the method's companion (:mod:`sentcl.methods.momentum`): they
    live beside the model, are saved in ``training_state.pt`` and are not part of the saved model.
    """
    o: ESimCSEOptions = cfg.objective  # type: ignore[assignment]
    repeat = WordRepetition(o.dup_rate, seed=cfg.training.seed)
    return Method(
        views=positive_view_augmented(repeat),
        objective=ESimCSELoss(o.temperature),
        examples=corpus.examples,
        stochastic=[repeat],
        companion=MomentumQueue(o.momentum, queue_size(cfg)),
    )
