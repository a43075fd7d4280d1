"""ArcCSE (Zhang et al. 2022, ACL): ArcCon (angular margin on the positive) + a triplet over masked views."""

from __future__ import annotations

from dataclasses import dataclass

from transformers import PreTrainedTokenizerBase

from sentcl.config import ConfigError, TrainConfig, opt
from sentcl.data.augment.nested_spans import NestedSpanMask
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method, TemperatureOptions, register_method
from sentcl.methods.views import duplicate_view
from sentcl.objectives.arccse import ArcCSELoss


@dataclass
class ArcCSEOptions(TemperatureOptions):
    angular_margin: float = opt(
        10.0, "Additive angular margin m on the positive, in degrees (the paper: 10)."
    )
    triplet_margin: float = opt(
        0.0, "Margin of the triplet term on angles, in degrees (not verified against the paper: 0)."
    )
    triplet_weight: float = opt(1.0, "Weight of the triplet term (not verified against the paper: 1).")
    weak_mask: float = opt(
        0.1, "Fraction of tokens masked (one span) in the less-masked view x' (unverified)."
    )
    strong_mask: float = opt(
        0.2, "Fraction masked in the more-masked view x'' (its span contains x''s; unverified)."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("angular_margin", "triplet_margin"):
            if not 0.0 <= getattr(self, name) < 90.0:
                raise ConfigError(f"objective.{name} must be in [0, 90) degrees, got {getattr(self, name)!r}")
        if self.triplet_weight < 0:
            raise ConfigError(f"objective.triplet_weight must be >= 0, got {self.triplet_weight!r}")
        if not 0.0 < self.weak_mask < self.strong_mask < 1.0:
            raise ConfigError(
                f"arccse needs 0 < objective.weak_mask < strong_mask < 1, got {self.weak_mask}, {self.strong_mask}"
            )


@register_method("arccse", reader="lines", options=ArcCSEOptions)
def arccse(cfg: TrainConfig, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """ArcCSE: views (s, s, x', x''); ArcCon on the two dropout copies + triplet angle(s, x') < angle(s, x'')."""
    o: ArcCSEOptions = cfg.objective  # type: ignore[assignment]
    masks = NestedSpanMask(o.weak_mask, o.strong_mask, tokenizer, generator=cfg.training.seed)
    return Method(
        views=duplicate_view(4),
        objective=ArcCSELoss(o.temperature, o.angular_margin, o.triplet_margin, o.triplet_weight),
        examples=corpus.examples,
        token_augment=[None, None, masks.weak, masks.strong],
        stochastic=[masks],
        views_are_copies=True,
    )
