"""ESimCSEOptions and the record of ``esimcse``, torch-free: what a recipe may set, checked once here,
and the paper (Xing Wu et al.: ESimCSE: Enhanced Sample Building Method for Contrastive Learning of Unsupervised Sentence Embedding) with its link.

The builder (``build.py``) receives an instance of ESimCSEOptions and trusts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sentcl.config.method_record import STS7, MethodRecord, Paper, register_method
from sentcl.config.objective import (
    TemperatureOptions,
)
from sentcl.config.typed import (
    check_in_unit,
    check_non_negative,
    opt,
)

if TYPE_CHECKING:
    pass


@dataclass
class ESimCSEOptions(TemperatureOptions):
    dup_rate: float = opt(
        0.32,
        "Maximum word-repetition rate: the positive view repeats dup_len ~ U{0..max(2, int(dup_rate * n))} "
        "of its n words in place (the paper's BERT-base value 0.32).",
    )
    momentum: float = opt(0.995, "Momentum m of the momentum encoder: theta_m <- m theta_m + (1 - m) theta.")
    queue_factor: float = opt(
        2.5,
        "Queue of momentum-encoded negatives of queue_factor x training.batch_size sentences (the paper: "
        "2.5; 0 disables the queue).",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_in_unit("objective.dup_rate", self.dup_rate, closed=True)
        check_in_unit("objective.momentum", self.momentum)
        check_non_negative("objective.queue_factor", self.queue_factor)


#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "esimcse",
        ESimCSEOptions,
        "lines",
        Paper(
            "Xing Wu, Chaochen Gao, Liangjun Zang, Jizhong Han, Zhongyuan Wang and Songlin Hu",
            "ESimCSE: Enhanced Sample Building Method for Contrastive Learning of Unsupervised Sentence "
            "Embedding",
            "COLING 2022",
            "@inproceedings{wu2022esimcse, title={ESimCSE: Enhanced Sample Building Method for Contrastive "
            "Learning of Unsupervised Sentence Embedding}, author={Wu, Xing and Gao, Chaochen and Zang, "
            "Liangjun and Han, Jizhong and Wang, Zhongyuan and Hu, Songlin}, booktitle={COLING}, year={2022}}",
            78.27,
            f"{STS7}, unsupervised",
            url="https://arxiv.org/abs/2109.04380",
        ),
        "ESimCSE (Wu et al., 2022): word repetition positives, a momentum-encoded negative queue",
    )
)
