"""SNCSEOptions and the record of ``sncse``, torch-free: what a recipe may set, checked once here,
and the paper (Hao Wang et al.: SNCSE: Contrastive Learning for Unsupervised Sentence Embedding with Soft Negative Samples) with its link.

The builder (``build.py``) receives an instance of SNCSEOptions and trusts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from sentcl.config.method_record import STS7, MethodRecord, Paper, register_method
from sentcl.config.objective import (
    TemperatureOptions,
)
from sentcl.config.typed import (
    ConfigError,
    check_non_negative,
    opt,
)
from sentcl.methods.promptbert.options import check_mask_pooler

if TYPE_CHECKING:
    from sentcl.config.sections import TrainConfig


@dataclass
class SNCSEOptions(TemperatureOptions):
    bml_alpha: float = opt(
        0.1, "alpha of BML = ReLU(Δ + alpha) + ReLU(-Δ - beta), Δ = cos(h, h_neg) - cos(h, h+)."
    )
    bml_beta: float = opt(0.3, "beta of the bidirectional margin loss (Δ is kept within [-beta, -alpha]).")
    bml_weight: float = opt(1e-3, "Weight of the bidirectional margin loss added to InfoNCE.")

    uses: ClassVar[tuple[str, ...]] = ("data.negation_file",)
    templated_views: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.bml_alpha <= self.bml_beta:
            raise ConfigError(
                f"objective.bml_alpha and bml_beta need 0 <= alpha <= beta, got {self.bml_alpha}, {self.bml_beta}"
            )
        check_non_negative("objective.bml_weight", self.bml_weight)

    def check(self, cfg: TrainConfig) -> None:
        check_mask_pooler(cfg)


#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "sncse",
        SNCSEOptions,
        "lines",
        Paper(
            "Hao Wang, Yangguang Li, Zhen Huang, Yong Dou, Lingpeng Kong and Jing Shao",
            "SNCSE: Contrastive Learning for Unsupervised Sentence Embedding with Soft Negative Samples",
            "arXiv 2201.05979, 2022",
            "Wang et al.: SNCSE: Contrastive Learning for Unsupervised Sentence Embedding with Soft Negative "
            "Samples. arXiv:2201.05979, 2022.",
            78.97,
            f"{STS7}, unsupervised",
            url="https://arxiv.org/abs/2201.05979",
        ),
        "SNCSE (Wang et al., 2022): PromptBERT's [MASK] state + the negation as a soft negative (BML)",
    )
)
