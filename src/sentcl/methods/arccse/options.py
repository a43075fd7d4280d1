"""ArcCSEOptions and the record of ``arccse``, torch-free: what a recipe may set, checked once here,
and the paper (Yuhao Zhang et al.: A Contrastive Framework for Learning Sentence Representations from Pairwise and Triple-wise Perspective in Angular Space) with its link.

The builder (``build.py``) receives an instance of ArcCSEOptions and trusts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sentcl.config.method_record import STS7, MethodRecord, Paper, register_method
from sentcl.config.objective import (
    TemperatureOptions,
)
from sentcl.config.typed import (
    ConfigError,
    check_non_negative,
    opt,
)

if TYPE_CHECKING:
    pass


@dataclass
class ArcCSEOptions(TemperatureOptions):
    angular_margin: float = opt(
        10.0, "Additive angular margin m on the positive, in degrees (the paper: 10)."
    )
    triplet_margin: float = opt(
        0.0, "Margin of the triplet term on angles, in degrees (not verified against the paper: 0)."
    )
    triplet_weight: float = opt(1.0, "Weight of the triplet term (not verified against the paper: 1).")
    weak_mask: float = opt(
        0.1, "Fraction of tokens masked (one span) in the less-masked view x' (unverified)."
    )
    strong_mask: float = opt(
        0.2, "Fraction masked in the more-masked view x'' (its span contains x''s; unverified)."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("angular_margin", "triplet_margin"):
            if not 0.0 <= getattr(self, name) < 90.0:
                raise ConfigError(f"objective.{name} must be in [0, 90) degrees, got {getattr(self, name)!r}")
        check_non_negative("objective.triplet_weight", self.triplet_weight)
        if not 0.0 < self.weak_mask < self.strong_mask < 1.0:
            raise ConfigError(
                f"arccse needs 0 < objective.weak_mask < strong_mask < 1, got {self.weak_mask}, {self.strong_mask}"
            )


#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "arccse",
        ArcCSEOptions,
        "lines",
        Paper(
            "Yuhao Zhang, Hongji Zhu, Yongliang Wang, Nan Xu, Xiaobo Li and Binqiang Zhao",
            "A Contrastive Framework for Learning Sentence Representations from Pairwise and Triple-wise "
            "Perspective in Angular Space",
            "ACL 2022",
            "@inproceedings{zhang2022arccse, title={A Contrastive Framework for Learning Sentence "
            "Representations from Pairwise and Triple-wise Perspective in Angular Space}, author={Zhang, "
            "Yuhao and others}, booktitle={ACL}, year={2022}}",
            78.11,
            f"{STS7}, unsupervised",
            url="https://aclanthology.org/2022.acl-long.336",
        ),
        "ArcCSE (Zhang et al., 2022): an angular margin on the positive + a triplet over masked views",
    )
)
