"""Quick-Thoughts (Logeswaran & Lee 2018): batches of consecutive sentences, neighbours as targets."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.readers import Corpus
from sentcl.methods.base import Example, Method
from sentcl.methods.quick_thoughts.options import QuickThoughtsOptions


def build(
    cfg: TrainConfig, o: QuickThoughtsOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase
) -> Method:
    """Logeswaran & Lee 2018: batches of consecutive sentences; f(s_i)·g(s_j) scores, softmax over the batch
    with the diagonal masked, targets the previous and next sentences (the KL form of Quick-Thoughts: ``objective.
    quick_thoughts_reduction=kl``, ``quick_thoughts_diagonal=zero``). Two encoders (``model.two_encoders``,
    inference embedding [f(s); g(s)] with ``model.dual_embedding=concat``) or one shared encoder."""
    from sentcl.methods.quick_thoughts.loss import QuickThoughts

    def meta(examples: Sequence[Example]) -> dict[str, Tensor]:
        return {
            "positions": torch.tensor([e.position for e in examples], dtype=torch.long),
            "doc_ids": torch.tensor([e.doc_id for e in examples], dtype=torch.long),
        }

    return Method(
        views=lambda example: (example.text, example.text),
        objective=QuickThoughts(
            context_size=o.context_size,
            reduction=o.quick_thoughts_reduction,
            diagonal=o.quick_thoughts_diagonal,
        ),
        examples=corpus.examples,
        sampler="contiguous",
        meta=meta,
        # f encodes the input sentence s_i, g the candidates s_j it scores (the paper's f(s_i)·g(s_j))
        view_encoders=("f", "g"),
    )
