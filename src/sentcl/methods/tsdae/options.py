"""TSDAEOptions and the record of ``tsdae``, torch-free: what a recipe may set, checked once here, and the paper
(Kexin Wang, Nils Reimers and Iryna Gurevych: TSDAE) with its link.

The builder (``build.py``) receives an instance of TSDAEOptions and trusts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sentcl.config.method_record import MethodRecord, Paper, register_method
from sentcl.config.objective import ObjectiveConfig
from sentcl.config.typed import ConfigError, opt

if TYPE_CHECKING:
    from sentcl.config.sections import TrainConfig

#: the paper's best noise: delete this fraction of the input's tokens (Wang et al. 2021, Section 5)
TSDAE_DELETION_RATIO = 0.6


@dataclass
class TSDAEOptions(ObjectiveConfig):
    """TSDAE (Wang, Reimers and Gurevych 2021): encode the damaged sentence, decode the original from its vector."""

    deletion_ratio: float = opt(
        TSDAE_DELETION_RATIO,
        "Fraction of each sentence's real tokens deleted before encoding (the paper's best noise: deletion, "
        "ratio 0.6; at least one token stays).",
    )
    tie_encoder_decoder: bool = opt(
        False,
        "Share every encoder weight with the decoder (only its cross-attention is its own), as "
        "sentence-transformers' DenoisingAutoEncoderLoss does by default; false: the decoder starts as a copy "
        "of the encoder with its word embeddings and LM head tied to the encoder's word embeddings.",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.deletion_ratio < 1.0:
            raise ConfigError(f"objective.deletion_ratio must be in [0, 1), got {self.deletion_ratio!r}")

    def check(self, cfg: TrainConfig) -> None:
        if cfg.model.pooler == "cls":
            raise ConfigError(
                "tsdae decodes from the pooled vector itself, not through SimCSE's MLP head (model.pooler=cls): "
                "use model.pooler=cls_before_pooler for a raw encoder (the paper's [CLS]) or leave it null for a "
                "sentence encoder (its own pooling)"
            )
        if cfg.model.two_encoders:
            raise ConfigError("tsdae trains one encoder: it excludes model.two_encoders")
        if cfg.model.output_dim is not None:
            raise ConfigError(
                "tsdae's decoder reads the sentence vector as wide as the encoder's hidden layer: it excludes "
                "model.output_dim"
            )


#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "tsdae",
        TSDAEOptions,
        "lines",
        Paper(
            "Kexin Wang, Nils Reimers and Iryna Gurevych",
            "TSDAE: Using Transformer-based Sequential Denoising Auto-Encoder for Unsupervised Sentence "
            "Embedding Learning",
            "Findings of EMNLP 2021",
            "@inproceedings{wang2021tsdae, title={TSDAE: Using Transformer-based Sequential Denoising "
            "Auto-Encoder for Unsupervised Sentence Embedding Learning}, author={Wang, Kexin and Reimers, Nils "
            "and Gurevych, Iryna}, booktitle={Findings of the Association for Computational Linguistics: "
            "EMNLP 2021}, year={2021}}",
            None,
            "none: the paper reports domain tasks (AskUbuntu, CQADupStack, TwitterPara, SciDocs), not the "
            "7-task STS average",
            url="https://aclanthology.org/2021.findings-emnlp.59",
        ),
        "TSDAE (Wang, Reimers and Gurevych, 2021): decode the sentence from the vector of its damaged copy",
    )
)
