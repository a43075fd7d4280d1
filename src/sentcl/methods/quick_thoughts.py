"""Quick-Thoughts (Logeswaran & Lee 2018): batches of consecutive sentences, neighbours as targets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase

from sentcl.config import ObjectiveConfig, TrainConfig, check_choice, check_positive, opt
from sentcl.data.readers import Corpus
from sentcl.methods.base import TWO_ENCODER_KEYS, Example, Method, register_method


@dataclass
class QuickThoughtsOptions(ObjectiveConfig):
    context_size: int = opt(1, "Neighbours on each side that are targets.")
    quick_thoughts_reduction: str = opt(
        "pairs",
        "'pairs' (one cross-entropy per (sentence, neighbour), the paper), 'rows' (unit target mass spread "
        "over a row's neighbours, the authors' code) or 'kl' (KL(targets || softmax), the KL form of Quick-Thoughts).",
    )
    quick_thoughts_diagonal: str = opt(
        "mask", "The source sentence's own score: 'mask' (-inf) or 'zero' (0, in the softmax)."
    )

    uses: ClassVar[tuple[str, ...]] = TWO_ENCODER_KEYS

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("objective.context_size", self.context_size)
        check_choice(
            "objective.quick_thoughts_reduction", self.quick_thoughts_reduction, ("pairs", "rows", "kl")
        )
        check_choice("objective.quick_thoughts_diagonal", self.quick_thoughts_diagonal, ("mask", "zero"))


@register_method("quick_thoughts", reader="ordered_lines", options=QuickThoughtsOptions)
def quick_thoughts(cfg: TrainConfig, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """Logeswaran & Lee 2018: batches of consecutive sentences; f(s_i)·g(s_j) scores, softmax over the batch
    with the diagonal masked, targets the previous and next sentences (seed 002's form: ``objective.
    quick_thoughts_reduction=kl``, ``quick_thoughts_diagonal=zero``). Two encoders (``model.two_encoders``,
    inference embedding [f(s); g(s)] with ``model.dual_embedding=concat``) or one shared encoder."""
    from sentcl.objectives.quick_thoughts import QuickThoughts

    o: QuickThoughtsOptions = cfg.objective  # type: ignore[assignment]

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
    )
