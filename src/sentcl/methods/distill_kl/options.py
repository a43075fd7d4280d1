"""DistillKLOptions and the record of ``distill_kl``, torch-free: what a recipe may set, checked once here,
and the paper (sentcl (our reading): In-batch similarity-distribution distillation) with its link.

The builder (``build.py``) receives an instance of DistillKLOptions and trusts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from sentcl.config.method_record import MethodRecord, Paper, register_method
from sentcl.config.objective import (
    TeacherOptions,
)
from sentcl.config.typed import (
    check_positive,
    opt,
)

if TYPE_CHECKING:
    pass


#: distill_kl's temperatures (our reading, after RankCSE's ListNet: the teacher's is half the student's)
DISTILL_KL_TEMPERATURE = 0.05


DISTILL_KL_TEACHER_TEMPERATURE = 0.025


@dataclass
class DistillKLOptions(TeacherOptions):
    temperature: float = opt(
        DISTILL_KL_TEMPERATURE, "Student temperature: p_S = softmax over j != i of cos(s_i, s_j) / tau."
    )
    teacher_temperature: float = opt(
        DISTILL_KL_TEACHER_TEMPERATURE,
        "Teacher temperature: p_T = softmax over j != i of cos(t_i, t_j) / tau_T.",
    )

    temperature_keys: ClassVar[tuple[str, ...]] = ("temperature", "teacher_temperature")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("objective.temperature", self.temperature)
        check_positive("objective.teacher_temperature", self.teacher_temperature)

    def min_batch(self) -> tuple[int, str]:
        return 3, (
            "each sentence's distribution is over the batch's other sentences: with one other it is always 1, "
            "and the KL is exactly 0"
        )


#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "distill_kl",
        DistillKLOptions,
        "lines",
        Paper(
            "sentcl (our reading)",
            "In-batch similarity-distribution distillation",
            "unpublished",
            "In-batch similarity-distribution distillation: our reading of the relational part of RankCSE's "
            "ListNet term (Liu et al., ACL 2023) without its contrastive term; no paper states it alone",
            None,
            "none: no paper reports this loss alone",
            url="https://arxiv.org/abs/2305.16726",
        ),
        "the student's in-batch similarity distribution follows the teacher's (KL divergence; our reading)",
    )
)
