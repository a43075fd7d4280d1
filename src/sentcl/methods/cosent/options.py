"""CoSENTOptions and the record of ``cosent``, torch-free: what a recipe may set, checked once here,
and the paper (Jianlin Su: CoSENT: a more efficient sentence vector scheme than Sentence-BERT) with its link.

The builder (``build.py``) receives an instance of CoSENTOptions and trusts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from sentcl.config.method_record import MethodRecord, Paper, register_method
from sentcl.config.objective import (
    ObjectiveConfig,
)
from sentcl.config.typed import (
    check_positive,
    opt,
)

if TYPE_CHECKING:
    pass


#: CoSENT's lambda (Su 2022: 20)
COSENT_SCALE = 20.0


@dataclass
class CoSENTOptions(ObjectiveConfig):
    scale: float = opt(
        COSENT_SCALE,
        "CoSENT: lambda of log(1 + sum_{s_i > s_j} exp(lambda (cos_j - cos_i))); the paper's 20.",
    )

    scale_keys: ClassVar[tuple[str, ...]] = ("scale",)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("objective.scale", self.scale)

    def min_batch(self) -> tuple[int, str]:
        return 2, "a ranking loss orders the batch's pairs: one pair has no order, and the loss is exactly 0"


#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "cosent",
        CoSENTOptions,
        "scored_pairs",
        Paper(
            "Jianlin Su",
            "CoSENT: a more efficient sentence vector scheme than Sentence-BERT",
            "blog post (kexue.fm), 2022",
            "Su, Jianlin. CoSENT (1): a more efficient sentence vector scheme than Sentence-BERT. "
            "Blog post, kexue.fm, 2022.",
            None,
            "none: the post reports per-dataset Chinese STS results, no 7-task STS average",
            url="https://kexue.fm/archives/8847",
        ),
        "CoSENT (Su, 2022): a ranking loss on the cosines of scored pairs",
    )
)
