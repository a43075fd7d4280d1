"""RankCSE (Liu et al., ACL 2023): SimCSE's dropout views + ranking consistency + listwise ranking distillation."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method, check_examples
from sentcl.methods.rankcse.loss import RankCSELoss
from sentcl.methods.rankcse.options import RankCSEOptions
from sentcl.methods.teachers import Teachers
from sentcl.methods.views import duplicate_view


def build(cfg: TrainConfig, o: RankCSEOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """Views (s, s) with independent dropout masks; the teachers' cached vectors of s give the target ranking of
    the batch (``sentcl.methods.rankcse.loss``: InfoNCE + beta JS consistency + gamma ListNet / ListMLE)."""
    check_examples(corpus, lambda e: isinstance(e, str), "rankcse", "sentence", "check data.reader: lines")
    teachers = Teachers.build(cfg, corpus.examples)
    return Method(
        views=duplicate_view(2),
        objective=RankCSELoss(
            teachers.weights,
            o.temperature,
            o.teacher_temperature,
            o.listnet_temperature,
            o.listmle_temperature,
            o.ranking,
            o.listmle_weight,
            o.listnet_weight,
            o.consistency_weight,
        ),
        examples=corpus.examples,
        meta=teachers.meta,
        views_are_copies=True,
    )
