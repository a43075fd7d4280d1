"""CoSENT (Su 2022): scored pairs (s1, s2, score), a ranking loss on the pairs' cosines (objectives/cosent.py)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.readers import Corpus
from sentcl.methods.base import Example, Method, check_examples, check_scores_vary
from sentcl.methods.cosent.loss import CoSENT
from sentcl.methods.cosent.options import CoSENTOptions


def _is_scored_pair(example: Example) -> bool:
    return (
        isinstance(example, tuple)
        and len(example) == 3
        and isinstance(example[0], str)
        and isinstance(example[1], str)
        and isinstance(example[2], float | int)
    )


def scores_meta(examples: Sequence[Example]) -> dict[str, Tensor]:
    """The batch's gold scores for the objective: {"scores": (B,)}."""
    return {"scores": torch.tensor([float(e[2]) for e in examples], dtype=torch.float32)}


def build(cfg: TrainConfig, o: CoSENTOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """Su 2022: views (s1, s2) of each scored pair; L = log(1 + Σ_{s_i > s_j} e^{λ(cos_j − cos_i)}), λ = 20.

    Examples come from ``data.reader=scored_pairs`` (a user's TSV/CSV/JSONL with sentence1, sentence2, score,
    in any language: KorSTS, the Chinese STS-B, ...) or ``stsb`` (STS Benchmark's own TSV layout).
    """
    check_examples(
        corpus,
        _is_scored_pair,
        "cosent",
        "(sentence1, sentence2, score)",
        "data.reader must be scored_pairs or stsb",
    )
    check_scores_vary(corpus, "cosent", lambda example: float(example[2]))
    return Method(
        views=lambda example: (example[0], example[1]),
        objective=CoSENT(o.scale),
        examples=corpus.examples,
        meta=scores_meta,
    )
