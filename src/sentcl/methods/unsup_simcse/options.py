"""UnsupSimCSEOptions and the record of ``unsup_simcse``, torch-free: what a recipe may set, checked once here,
and the paper (Tianyu Gao et al.: SimCSE: Simple Contrastive Learning of Sentence Embeddings) with its link.

The builder (``build.py``) receives an instance of UnsupSimCSEOptions and trusts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from sentcl.config.method_record import STS7, MethodRecord, Paper, register_method
from sentcl.config.objective import (
    AUGMENTATION_KEYS,
    TWO_ENCODER_KEYS,
    InfoNCEOptions,
)
from sentcl.config.typed import (
    ConfigError,
    opt,
)

if TYPE_CHECKING:
    from sentcl.config.sections import TrainConfig


@dataclass
class UnsupSimCSEOptions(InfoNCEOptions):
    symmetric: bool = opt(
        False,
        "A symmetric loss (views interleaved, 2N x 2N cosine matrix with the diagonal masked, "
        "cross-entropy for every row); not the paper's eq. 1.",
    )

    uses: ClassVar[tuple[str, ...]] = (*AUGMENTATION_KEYS, "model.same_dropout_mask", *TWO_ENCODER_KEYS)

    def check(self, cfg: TrainConfig) -> None:
        d = cfg.data
        if cfg.model.same_dropout_mask and (d.augmentation or d.token_augmentation):
            raise ConfigError("model.same_dropout_mask encodes one view for both: it excludes augmentations")


#: Gao, Yao and Chen: SimCSE: Simple Contrastive Learning of Sentence Embeddings (the paper four methods cite)
SIMCSE = dict(
    authors="Tianyu Gao, Xingcheng Yao and Danqi Chen",
    title="SimCSE: Simple Contrastive Learning of Sentence Embeddings",
    venue="EMNLP 2021",
    citation="@inproceedings{gao2021simcse, title={SimCSE: Simple Contrastive Learning of Sentence Embeddings}, "
    "author={Gao, Tianyu and Yao, Xingcheng and Chen, Danqi}, booktitle={EMNLP}, year={2021}}",
    url="https://aclanthology.org/2021.emnlp-main.552",
)

#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "unsup_simcse",
        UnsupSimCSEOptions,
        "lines",
        Paper(**SIMCSE, headline=76.25, headline_what=f"{STS7}, unsupervised (Table 5)"),
        "SimCSE (Gao et al., 2021), unsupervised: dropout noise as the positive",
    )
)
