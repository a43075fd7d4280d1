"""MixCSEOptions and the record of ``mixcse``, torch-free: what a recipe may set, checked once here,
and the paper (Yanzhao Zhang et al.: Unsupervised Sentence Representation via Contrastive Learning with Mixing Negatives) with its link.

The builder (``build.py``) receives an instance of MixCSEOptions and trusts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sentcl.config.method_record import STS7, MethodRecord, Paper, register_method
from sentcl.config.objective import (
    TemperatureOptions,
)
from sentcl.config.typed import (
    check_choice,
    check_in_unit,
    opt,
)

if TYPE_CHECKING:
    pass


#: MixCSE's mixing partners: the next sentence of the batch (the paper) or every other one (ours)
MIX_PARTNERS = ("one", "all")


@dataclass
class MixCSEOptions(TemperatureOptions):
    mix_lambda: float = opt(
        0.2, "lambda of the mixed negative lambda h_i^+ + (1 - lambda) h_j (the paper's BERT-base 0.2)."
    )
    mix_partners: str = opt(
        "one",
        "'one': one mixed negative per anchor, with the next sentence of the (random) batch (the paper's "
        "formula); 'all' (ours): one with every other sentence of the batch.",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("objective.mix_partners", self.mix_partners, MIX_PARTNERS)
        check_in_unit("objective.mix_lambda", self.mix_lambda, closed=True)

    def min_batch(self) -> tuple[int, str]:
        return 2, "it mixes each positive with another sentence of the batch, and its InfoNCE needs negatives"


#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "mixcse",
        MixCSEOptions,
        "lines",
        Paper(
            "Yanzhao Zhang, Richong Zhang, Samuel Mensah, Xudong Liu and Yongyi Mao",
            "Unsupervised Sentence Representation via Contrastive Learning with Mixing Negatives",
            "AAAI 2022",
            "@inproceedings{zhang2022mixcse, title={Unsupervised Sentence Representation via Contrastive "
            "Learning with Mixing Negatives}, author={Zhang, Yanzhao and Zhang, Richong and Mensah, Samuel and "
            "Liu, Xudong and Mao, Yongyi}, booktitle={AAAI}, year={2022}}",
            77.66,
            f"{STS7}, unsupervised (77.66 +- 0.61)",
            url="https://doi.org/10.1609/aaai.v36i10.21428",
        ),
        "MixCSE (Zhang et al., 2022): detached mixed hard negatives added to SimCSE",
    )
)
