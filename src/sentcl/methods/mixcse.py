"""MixCSE (Zhang et al. 2022, AAAI): unsupervised SimCSE plus detached mixed hard negatives."""

from __future__ import annotations

from dataclasses import dataclass

from transformers import PreTrainedTokenizerBase

from sentcl.config import ConfigError, TrainConfig, check_choice, opt
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method, TemperatureOptions, register_method
from sentcl.methods.views import duplicate_view
from sentcl.objectives.mixcse import PARTNERS, MixCSELoss


@dataclass
class MixCSEOptions(TemperatureOptions):
    mix_lambda: float = opt(
        0.2, "lambda of the mixed negative lambda h_i^+ + (1 - lambda) h_j (the paper's BERT-base 0.2)."
    )
    mix_partners: str = opt(
        "one",
        "'one': one mixed negative per anchor, with the next sentence of the (random) batch (the paper's "
        "formula); 'all' (ours): one with every other sentence of the batch.",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("objective.mix_partners", self.mix_partners, PARTNERS)
        if not 0.0 <= self.mix_lambda <= 1.0:
            raise ConfigError(f"objective.mix_lambda must be in [0, 1], got {self.mix_lambda!r}")

    def check(self, cfg: TrainConfig) -> None:
        if cfg.training.batch_size < 2:
            raise ConfigError("mixcse mixes a positive with another sentence of the batch: batch_size >= 2")


@register_method("mixcse", reader="lines", options=MixCSEOptions)
def mixcse(cfg: TrainConfig, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """MixCSE: (s, s) with independent dropout masks; InfoNCE whose denominator also holds mixed negatives."""
    o: MixCSEOptions = cfg.objective  # type: ignore[assignment]
    return Method(
        views=duplicate_view(2),
        objective=MixCSELoss(o.temperature, o.mix_lambda, o.mix_partners),
        examples=corpus.examples,
        views_are_copies=True,
    )
