"""PromptBERTOptions and the record of ``promptbert``, torch-free: what a recipe may set, checked once here,
and the paper (Ting Jiang et al.: PromptBERT: Improving BERT Sentence Embeddings with Prompts) with its link.

The builder (``build.py``) receives an instance of PromptBERTOptions and trusts it.
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
)

if TYPE_CHECKING:
    from sentcl.config.sections import TrainConfig


def check_mask_pooler(cfg: TrainConfig) -> None:
    """PromptBERT's representation is the [MASK] state of a template: ``model.pooler=mask``."""
    if cfg.model.pooler != "mask":
        raise ConfigError(
            f"{cfg.objective.name} needs model.pooler=mask (the [MASK] state of a template), got "
            f"{cfg.model.pooler!r}"
        )


@dataclass
class PromptBERTOptions(TemperatureOptions):
    templated_views: ClassVar[bool] = True

    def check(self, cfg: TrainConfig) -> None:
        check_mask_pooler(cfg)


#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "promptbert",
        PromptBERTOptions,
        "lines",
        Paper(
            "Ting Jiang, Jian Jiao, Shaohan Huang, Zihan Zhang, Deqing Wang, Fuzhen Zhuang, Furu Wei, "
            "Haizhen Huang, Denvy Deng and Qi Zhang",
            "PromptBERT: Improving BERT Sentence Embeddings with Prompts",
            "EMNLP 2022",
            "Jiang et al.: PromptBERT: Improving BERT Sentence Embeddings with Prompts. EMNLP 2022.",
            78.54,
            f"{STS7}, unsupervised (78.54 +- 0.15, 5 seeds)",
            url="https://arxiv.org/abs/2201.04337",
        ),
        "PromptBERT (Jiang et al., 2022): the [MASK] state of a template, two templates as the positive",
    )
)
