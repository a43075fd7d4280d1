"""RankCSEOptions and the record of ``rankcse``, torch-free: what a recipe may set, checked once here,
and the paper (Jiduan Liu et al.: RankCSE: Unsupervised Sentence Representations Learning via Learning to Rank) with its link.

The builder (``build.py``) receives an instance of RankCSEOptions and trusts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from sentcl.config.method_record import STS7, MethodRecord, Paper, register_method
from sentcl.config.objective import (
    IN_BATCH_NEGATIVES,
    TeacherOptions,
)
from sentcl.config.typed import (
    check_choice,
    check_non_negative,
    check_positive,
    opt,
)

if TYPE_CHECKING:
    pass


#: RankCSE's ranking losses: ListMLE (its best BERT-base number), ListNet, or both
RANKINGS = ("listmle", "listnet", "both")


@dataclass
class RankCSEOptions(TeacherOptions):
    temperature: float = opt(0.05, "tau_1 of SimCSE's InfoNCE on the two dropout views.")
    teacher_temperature: float = opt(
        0.05, "tau_2: the teachers' in-batch similarities are scaled by 1/tau_2 (their softmax for ListNet)."
    )
    listnet_temperature: float = opt(
        0.025, "tau_3: the student's similarities in ListNet are scaled by 1/tau_3 (tau_2 / 2, as the paper)."
    )
    listmle_temperature: float = opt(
        0.05, "The student's similarities in ListMLE are scaled by 1/this (the public reproduction's tau_2)."
    )
    ranking: str = opt(
        "listmle",
        "Ranking distillation: 'listmle' (Plackett-Luce likelihood of the teachers' order; the paper's best "
        "BERT-base row, 80.36), 'listnet' (cross-entropy of top-one probabilities; 80.05) or 'both'.",
    )
    listmle_weight: float = opt(1.0, "gamma: weight of the ListMLE term.")
    listnet_weight: float = opt(1.0, "gamma: weight of the ListNet term.")
    consistency_weight: float = opt(
        1.0,
        "beta: weight of the ranking consistency term, the Jensen-Shannon divergence between the in-batch "
        "distributions of the two dropout views (0: off).",
    )

    temperature_keys: ClassVar[tuple[str, ...]] = (
        "temperature",
        "teacher_temperature",
        "listnet_temperature",
        "listmle_temperature",
    )

    def min_batch(self) -> tuple[int, str]:
        return IN_BATCH_NEGATIVES

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("temperature", "teacher_temperature", "listnet_temperature", "listmle_temperature"):
            check_positive(f"objective.{name}", getattr(self, name))
        check_choice("objective.ranking", self.ranking, RANKINGS)
        for name in ("listmle_weight", "listnet_weight", "consistency_weight"):
            check_non_negative(f"objective.{name}", getattr(self, name))


#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "rankcse",
        RankCSEOptions,
        "lines",
        Paper(
            "Jiduan Liu, Jiahao Liu, Qifan Wang, Jingang Wang, Wei Wu, Yunsen Xian, Dongyan Zhao, Kai Chen and "
            "Rui Yan",
            "RankCSE: Unsupervised Sentence Representations Learning via Learning to Rank",
            "ACL 2023",
            "@inproceedings{liu2023rankcse, title={RankCSE: Unsupervised Sentence Representations Learning via "
            "Learning to Rank}, author={Liu, Jiduan and Liu, Jiahao and Wang, Qifan and Wang, Jingang and Wu, Wei "
            "and Xian, Yunsen and Zhao, Dongyan and Chen, Kai and Yan, Rui}, booktitle={ACL}, year={2023}}",
            80.36,
            f"{STS7}, unsupervised, the ListMLE variant (ListNet: 80.05)",
            url="https://arxiv.org/abs/2305.16726",
        ),
        "RankCSE (Liu et al., 2023): SimCSE + ranking consistency + listwise ranking distillation from teachers",
    )
)
