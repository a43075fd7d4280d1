"""Token cutoff + triplet (the unpublished token-cutoff triplet note): anchor s, weak view s* (10% cut), strong view s** (20% cut, LeakyReLU head)."""

from __future__ import annotations

import logging

from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.augment import TOKEN_AUGMENTATIONS
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method
from sentcl.methods.cutoff_triplet.loss import CutoffTriplet
from sentcl.methods.cutoff_triplet.options import CutoffTripletOptions
from sentcl.methods.views import duplicate_view

logger = logging.getLogger(__name__)


def build(
    cfg: TrainConfig, o: CutoffTripletOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase
) -> Method:
    """Token cutoff + triplet (the unpublished token-cutoff triplet note): anchor s, weak view s* (10% cut), strong view s** (20% cut, LeakyReLU head).

    ``objective.triplet_form=paper`` (default): views (s, s, s*, s**); loss = NT-Xent(s, s') (dropout noise)
    + lambda · mean max(0, m + sim(s, s**) − sim(s, s*)), m = 0 (``objective.order=weak_closer``: the order
    that keeps the weak view closer, the paper's stated intent; the paper prints the two similarities the
    other way round, ``objective.order=as_printed``); inference is [CLS] through the MLP
    (``model.mlp_only_train=false``). ``weak_positive`` (ours): views (s, s*, s**), InfoNCE(s, s*).
    The strong view cuts strictly more tokens than the weak one wherever the sentence has enough.
    The pooler rule (model.pooler=cls) is checked by sentcl.training.validation.
    """
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
