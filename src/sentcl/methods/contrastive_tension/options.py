"""ContrastiveTensionOptions and the record of ``contrastive_tension``, torch-free: what a recipe may set, checked
once here, and the paper (Fredrik Carlsson et al.: Semantic Re-tuning with Contrastive Tension) with its link.

The builder (``build.py``) receives an instance of ContrastiveTensionOptions and trusts it.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sentcl.config.method_record import STS7, MethodRecord, Paper, register_method
from sentcl.config.objective import IN_BATCH_NEGATIVES, SIMILARITIES, ObjectiveConfig, similarity_option
from sentcl.config.typed import ConfigError, check_choice, check_positive, opt

if TYPE_CHECKING:
    from sentcl.config.sections import TrainConfig

#: the in-batch form's starting scale of the cosine logits (sentence-transformers'
#: ContrastiveTensionLossInBatchNegatives: scale=20, a learnt logit scale that starts at log 20)
CT_SCALE = 20.0


@dataclass
class ContrastiveTensionOptions(ObjectiveConfig):
    """Contrastive Tension with in-batch negatives: logits sim(f(s_i), g(s_j)) · scale, cross-entropy both ways."""

    scale: float = opt(
        CT_SCALE,
        "The logits' scale (1 / temperature) as training starts: sentence-transformers' in-batch form, 20.",
    )
    learn_scale: bool = opt(
        True,
        "Learn the scale (a log-scale parameter trained with the encoders, as sentence-transformers' in-batch "
        "form does); false keeps it fixed.",
    )
    similarity: str = similarity_option()

    scale_keys: typing.ClassVar[tuple[str, ...]] = ("scale",)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("objective.scale", self.scale)
        check_choice("objective.similarity", self.similarity, SIMILARITIES)

    def min_batch(self) -> tuple[int, str]:
        return IN_BATCH_NEGATIVES

    def check(self, cfg: TrainConfig) -> None:
        if cfg.model.two_encoders:
            raise ConfigError(
                "contrastive_tension builds its own second encoder (kept out of the saved model): it excludes "
                "model.two_encoders"
            )


#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "contrastive_tension",
        ContrastiveTensionOptions,
        "lines",
        Paper(
            "Fredrik Carlsson, Amaru Cuba Gyllensten, Evangelia Gogoulou, Erik Ylipää Hellqvist and Magnus "
            "Sahlgren",
            "Semantic Re-tuning with Contrastive Tension",
            "ICLR 2021",
            "@inproceedings{carlsson2021semantic, title={Semantic Re-tuning with Contrastive Tension}, "
            "author={Carlsson, Fredrik and Gyllensten, Amaru Cuba and Gogoulou, Evangelia and Hellqvist, Erik "
            'Ylip{\\"a}{\\"a} and Sahlgren, Magnus}, booktitle={ICLR}, year={2021}}',
            72.05,
            f"{STS7}, CT-BERT-base as SimCSE's Table 5 lists it (the paper's own form, without in-batch "
            "negatives)",
            url="https://openreview.net/forum?id=Ov_sMNau-PF",
        ),
        "Contrastive Tension (Carlsson et al., 2021), in-batch negatives: two copies of the encoder, the same "
        "sentence through both as the positive",
    )
)
