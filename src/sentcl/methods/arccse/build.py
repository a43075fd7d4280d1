"""ArcCSE (Zhang et al. 2022, ACL): ArcCon (angular margin on the positive) + a triplet over masked views."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.augment.nested_spans import NestedSpanMask
from sentcl.data.readers import Corpus
from sentcl.methods.arccse.loss import ArcCSELoss
from sentcl.methods.arccse.options import ArcCSEOptions
from sentcl.methods.base import Method
from sentcl.methods.views import duplicate_view


def build(cfg: TrainConfig, o: ArcCSEOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """ArcCSE: views (s, s, x', x''); ArcCon on the two dropout copies + triplet angle(s, x') < angle(s, x'')."""
    masks = NestedSpanMask(o.weak_mask, o.strong_mask, tokenizer, generator=cfg.training.seed)
    return Method(
        views=duplicate_view(4),
        objective=ArcCSELoss(o.temperature, o.angular_margin, o.triplet_margin, o.triplet_weight),
        examples=corpus.examples,
        token_augment=[None, None, masks.weak, masks.strong],
        stochastic=[masks],
        views_are_copies=True,
    )
