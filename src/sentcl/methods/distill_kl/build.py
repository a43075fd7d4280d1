"""distill_kl: the student's in-batch similarity distribution follows the teachers' (KL divergence)."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method
from sentcl.methods.distill_kl.loss import DistillKL
from sentcl.methods.distill_kl.options import DistillKLOptions
from sentcl.methods.teachers import Teachers, teacher_text


def build(
    cfg: TrainConfig, o: DistillKLOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase
) -> Method:
    """KL(p_T || p_S) of each sentence's distribution over the batch's others (``sentcl.methods.distill_kl.loss``).

    One view per sentence (the student encodes it once, with dropout); of a pair, the first sentence.
    """
    teachers = Teachers.build(cfg, corpus.examples)
    return Method(
        views=lambda e: (teacher_text(e),),
        objective=DistillKL(teachers.weights, o.temperature, o.teacher_temperature),
        examples=corpus.examples,
        meta=teachers.meta,
        views_are_copies=all(isinstance(e, str) for e in corpus.examples),
    )
