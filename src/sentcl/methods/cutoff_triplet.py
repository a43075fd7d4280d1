"""Token cutoff + triplet (seed 003): anchor s, weak view s* (10% cut), strong view s** (20% cut, LeakyReLU head)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import ClassVar

from transformers import PreTrainedTokenizerBase

from sentcl.config import ConfigError, TrainConfig, check_choice, opt
from sentcl.data.augment import TOKEN_AUGMENTATIONS
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method, TemperatureOptions, register_method
from sentcl.methods.views import duplicate_view
from sentcl.objectives.triplet import TRIPLET_FORMS, TRIPLET_ORDERS, CutoffTriplet

logger = logging.getLogger(__name__)


@dataclass
class CutoffTripletOptions(TemperatureOptions):
    margin: float = opt(
        0.0,
        "Margin m of max(0, m + sim(s, s**) - sim(s, s*)); the paper prints none (0), our weak_positive "
        "recipe uses 0.2.",
    )
    triplet_form: str = opt(
        "paper",
        "'paper' (NT-Xent on (s, s) with dropout + triplet on s*, s**; 4 views) or 'weak_positive' (ours: "
        "InfoNCE with the weak view s* as positive; 3 views).",
    )
    triplet_weight: float = opt(1.0, "Weight of the triplet term added to InfoNCE.")
    weak_cutoff: float = opt(0.1, "Fraction of tokens cut in the weak view s*.")
    strong_cutoff: float = opt(0.2, "Fraction of tokens cut in the strong view s** (more than weak_cutoff).")
    strong_activation: str = opt("leaky_relu", "Head activation of the strong view (tanh or leaky_relu).")
    order: str = opt(
        "weak_closer",
        "Triplet term order: 'weak_closer' max(0, m + sim(s, s**) - sim(s, s*)), which keeps the weak view "
        "closer (the paper's stated intent), or 'as_printed' max(0, m + sim(s, s*) - sim(s, s**)), the order "
        "seed 003 prints.",
    )

    uses: ClassVar[tuple[str, ...]] = ("data.cutoff_token",)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("objective.strong_activation", self.strong_activation, ("tanh", "leaky_relu"))
        check_choice("objective.triplet_form", self.triplet_form, TRIPLET_FORMS)
        check_choice("objective.order", self.order, TRIPLET_ORDERS)
        if self.margin < 0:
            raise ConfigError(f"objective.margin must be >= 0, got {self.margin!r}")
        for name in ("weak_cutoff", "strong_cutoff"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"objective.{name} must be in [0, 1), got {getattr(self, name)!r}")
        if self.strong_cutoff <= self.weak_cutoff:
            raise ConfigError(
                f"cutoff_triplet needs objective.strong_cutoff > weak_cutoff, got {self.strong_cutoff} <= "
                f"{self.weak_cutoff}"
            )

    def check(self, cfg: TrainConfig) -> None:
        if cfg.model.pooler not in (None, "cls"):  # None: the start model's own, cls for a plain backbone
            raise ConfigError(
                "cutoff_triplet needs model.pooler=cls: the strong view's MLP head uses LeakyReLU"
            )


@register_method("cutoff_triplet", reader="lines", options=CutoffTripletOptions)
def cutoff_triplet(cfg: TrainConfig, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """Token cutoff + triplet (seed 003): anchor s, weak view s* (10% cut), strong view s** (20% cut, LeakyReLU head).

    ``objective.triplet_form=paper`` (default): views (s, s, s*, s**); loss = NT-Xent(s, s') (dropout noise)
    + lambda · mean max(0, m + sim(s, s**) − sim(s, s*)), m = 0 (``objective.order=weak_closer``: the order
    that keeps the weak view closer, the paper's stated intent; the paper prints the two similarities the
    other way round, ``objective.order=as_printed``); inference is [CLS] through the MLP
    (``model.mlp_only_train=false``). ``weak_positive`` (ours): views (s, s*, s**), InfoNCE(s, s*).
    The strong view cuts strictly more tokens than the weak one wherever the sentence has enough.
    The pooler rule (model.pooler=cls) is checked by sentcl.validation.
    """
    o: CutoffTripletOptions = cfg.objective  # type: ignore[assignment]
    seed = cfg.training.seed
    if o.triplet_form == "paper" and cfg.model.mlp_only_train:
        logger.warning(
            "cutoff_triplet: the paper's sentence vector is [CLS] through the MLP; model.mlp_only_train=true "
            "drops the MLP at inference"
        )
    weak = TOKEN_AUGMENTATIONS.build(
        "token_cutoff",
        rate=o.weak_cutoff,
        tokenizer=tokenizer,
        replace_with=cfg.data.cutoff_token,
        generator=seed,
    )
    strong = TOKEN_AUGMENTATIONS.build(
        "token_cutoff",
        rate=o.strong_cutoff,
        tokenizer=tokenizer,
        replace_with=cfg.data.cutoff_token,
        generator=seed + 1,
        exceed_rate=o.weak_cutoff,
    )
    objective = CutoffTriplet(o.temperature, o.margin, o.triplet_weight, o.triplet_form, o.order)
    paper = o.triplet_form == "paper"
    return Method(
        views=duplicate_view(objective.num_views),
        objective=objective,
        examples=corpus.examples,
        token_augment=[None, None, weak, strong] if paper else [None, weak, strong],
        head_activation=("tanh",) * (objective.num_views - 1) + (o.strong_activation,),
        stochastic=[weak, strong],
        views_are_copies=True,
    )
