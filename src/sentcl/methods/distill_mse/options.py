"""DistillMSEOptions and the record of ``distill_mse``, torch-free: what a recipe may set, checked once here,
and the paper (Nils Reimers et al.: Making Monolingual Sentence Embeddings Multilingual using Knowledge Distillation) with its link.

The builder (``build.py``) receives an instance of DistillMSEOptions and trusts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from sentcl.config.method_record import MethodRecord, Paper, register_method
from sentcl.config.objective import (
    IN_BATCH_NEGATIVES,
    TEACHER_KEYS,
    TeacherOptions,
    temperature_option,
)
from sentcl.config.typed import (
    check_non_negative,
    check_positive,
    opt,
)

if TYPE_CHECKING:
    pass


@dataclass
class DistillMSEOptions(TeacherOptions):
    simcse_weight: float = opt(
        0.0,
        "lambda of an added SimCSE term (ours, not the paper's): lambda x InfoNCE between two dropout views of "
        "each sentence (of a pair: the sentence and its translation); 0: the paper's loss alone.",
    )
    temperature: float = temperature_option()

    uses: ClassVar[tuple[str, ...]] = TEACHER_KEYS
    temperature_keys: ClassVar[tuple[str, ...]] = ("temperature",)

    def min_batch(self) -> tuple[int, str]:
        """The MSE to the teachers learns from one sentence; the added SimCSE term needs in-batch negatives."""
        return IN_BATCH_NEGATIVES if self.simcse_weight > 0 else (1, "")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_non_negative("objective.simcse_weight", self.simcse_weight)
        check_positive("objective.temperature", self.temperature)


#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "distill_mse",
        DistillMSEOptions,
        "lines",
        Paper(
            "Nils Reimers and Iryna Gurevych",
            "Making Monolingual Sentence Embeddings Multilingual using Knowledge Distillation",
            "EMNLP 2020",
            "@inproceedings{reimers2020multilingual, title={Making Monolingual Sentence Embeddings Multilingual "
            "using Knowledge Distillation}, author={Reimers, Nils and Gurevych, Iryna}, booktitle={EMNLP}, "
            "year={2020}}",
            None,
            "none: no comparable number; the paper reports multilingual and cross-lingual STS 2017 (Tables 1-2) and "
            "bitext retrieval, not the 7-task English STS average",
            url="https://aclanthology.org/2020.emnlp-main.365",
        ),
        "knowledge distillation (Reimers & Gurevych, 2020): the student reproduces the teacher's vectors (MSE); "
        "parallel sentences make it multilingual",
    )
)
