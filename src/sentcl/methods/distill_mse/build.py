"""distill_mse (Reimers & Gurevych 2020): the student reproduces the teachers' vectors."""

from __future__ import annotations

import torch
from transformers import PreTrainedTokenizerBase

from sentcl.config import ConfigError, TrainConfig
from sentcl.data.readers import Corpus
from sentcl.files.read import preview
from sentcl.methods.base import Example, Method
from sentcl.methods.distill_mse.loss import DistillMSE
from sentcl.methods.distill_mse.options import DistillMSEOptions
from sentcl.methods.teachers import Teachers
from sentcl.methods.views import duplicate_view


def is_parallel(example: Example) -> bool:
    return isinstance(example, tuple) and len(example) == 2 and all(isinstance(s, str) for s in example)


def corpus_views(corpus: Corpus, method: str) -> int:
    """1 for a corpus of sentences, 2 for one of (source, translation) pairs; anything else is a ConfigError."""
    if all(isinstance(e, str) for e in corpus.examples):
        return 1
    if all(is_parallel(e) for e in corpus.examples):
        return 2
    first = is_parallel(corpus.examples[0])
    bad = next(
        i
        for i, e in enumerate(corpus.examples)
        if is_parallel(e) != first or not (first or isinstance(e, str))
    )
    raise ConfigError(
        f"{method} trains on sentences (data.reader=lines) or (source, translation) pairs (data.reader=pairs), "
        f"one kind per file; example {bad} of {corpus.path} is {preview(corpus.examples[bad])}"
    )


def build(
    cfg: TrainConfig, o: DistillMSEOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase
) -> Method:
    """Reimers & Gurevych 2020, eq. 1: MSE(M^(s), M(s)) [+ MSE(M^(t), M(s)) for a translation t]
    [+ lambda InfoNCE of two views with ``objective.simcse_weight``].

    The teachers encode each distinct source sentence once (cached; ``sentcl.methods.teachers``); a pairs file
    (``data.reader=pairs``: source, translation) makes a model multilingual, the student encoding both sides.
    """
    views = corpus_views(corpus, "distill_mse")
    teachers = Teachers.build(cfg, corpus.examples)
    dim = teachers.same_dim("distill_mse")
    mapping = cfg.model.teacher_mapping
    basis = torch.from_numpy(teachers.pca_basis()) if mapping == "pca" else None
    parallel = views == 2
    loss = DistillMSE(teachers.weights, dim, parallel, mapping, basis, o.simcse_weight, o.temperature)
    return Method(
        views=(lambda e: (e[0], e[1])) if parallel else duplicate_view(loss.num_views),
        objective=loss,
        examples=corpus.examples,
        meta=teachers.meta,
        views_are_copies=not parallel,
    )
