"""QuickThoughtsOptions and the record of ``quick_thoughts``, torch-free: what a recipe may set, checked once here,
and the paper (Lajanugen Logeswaran et al.: An Efficient Framework for Learning Sentence Representations) with its link.

The builder (``build.py``) receives an instance of QuickThoughtsOptions and trusts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from sentcl.config.method_record import MethodRecord, Paper, register_method
from sentcl.config.objective import (
    TWO_ENCODER_KEYS,
    ObjectiveConfig,
)
from sentcl.config.typed import (
    check_choice,
    check_positive,
    opt,
)

if TYPE_CHECKING:
    pass


#: Quick-Thoughts' reductions and diagonal treatments
QT_REDUCTIONS = ("pairs", "rows", "kl")


QT_DIAGONALS = ("mask", "zero")


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

    def min_batch(self) -> tuple[int, str]:
        """A sentence classifies its neighbours among the batch's other sentences: with the diagonal masked, two
        sentences leave each one a single candidate, its neighbour, and the loss is exactly 0."""
        if self.quick_thoughts_diagonal == "mask":
            return 3, "each sentence picks its neighbours among the batch's others, its own score masked"
        return 2, "each sentence picks its neighbours among the batch's sentences"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("objective.context_size", self.context_size)
        check_choice("objective.quick_thoughts_reduction", self.quick_thoughts_reduction, QT_REDUCTIONS)
        check_choice("objective.quick_thoughts_diagonal", self.quick_thoughts_diagonal, QT_DIAGONALS)


#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "quick_thoughts",
        QuickThoughtsOptions,
        "ordered_lines",
        Paper(
            "Lajanugen Logeswaran and Honglak Lee",
            "An Efficient Framework for Learning Sentence Representations",
            "ICLR 2018",
            "@inproceedings{logeswaran2018efficient, title={An Efficient Framework for Learning Sentence "
            "Representations}, author={Logeswaran, Lajanugen and Lee, Honglak}, booktitle={ICLR}, year={2018}}",
            None,
            "none: the paper reports transfer-task accuracies, no STS average to compare with",
            url="https://arxiv.org/abs/1803.02893",
        ),
        "Quick-Thoughts (Logeswaran & Lee, 2018): classify the context sentences",
    )
)
