"""distill_kl: the student's in-batch similarity distribution follows the teachers' (KL divergence)."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.config.method_options import DistillKLOptions
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method, register_method
from sentcl.methods.teachers import Teachers, teacher_text
from sentcl.objectives.distill_kl import DistillKL


@register_method("distill_kl")
def distill_kl(
    cfg: TrainConfig, o: DistillKLOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase
) -> Method:
    """KL(p_T || p_S) of each sentence's distribution over the batch's others (``sentcl.objectives.distill_kl``).

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
