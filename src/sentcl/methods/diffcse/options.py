"""DiffCSEOptions and the record of ``diffcse``, torch-free: what a recipe may set, checked once here,
and the paper (Yung-Sung Chuang et al.: DiffCSE: Difference-based Contrastive Learning for Sentence Embeddings) with its link.

The builder (``build.py``) receives an instance of DiffCSEOptions and trusts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from sentcl.config.method_record import STS7, MethodRecord, Paper, register_method
from sentcl.config.objective import (
    InfoNCEOptions,
)
from sentcl.config.typed import (
    ConfigError,
    check_choice,
    check_non_negative,
    opt,
)

if TYPE_CHECKING:
    from sentcl.config.sections import TrainConfig


#: DiffCSE's BERT settings (Chuang et al. 2022, the authors' run_diffcse.sh): lambda and the masking ratio
DIFFCSE_LAMBDA = 0.005


DIFFCSE_MASKING_RATIO = 0.30


#: DiffCSE: which positions of x'' take the generator's token: every real token but the first, x'' = G(x') (the
#: paper and its code), or the masked ones only (ELECTRA's replacement)
DIFFCSE_EDITS = ("all", "masked")


#: DiffCSE: the generator's token at a position: its most likely one (the authors' code) or a draw from it
DIFFCSE_GENERATOR_OUTPUTS = ("argmax", "sample")


#: DiffCSE: positions the replaced-token loss averages over: the sentences' tokens (ours) or every padded
#: position of the batch, padding counted as "original" (the authors' code)
DIFFCSE_RTD_POSITIONS = ("tokens", "padded")


@dataclass
class DiffCSEOptions(InfoNCEOptions):
    """DiffCSE (Chuang et al. 2022): InfoNCE + lambda · L_RTD, the generator named by ``model.generator``."""

    lambda_weight: float = opt(
        DIFFCSE_LAMBDA,
        "Weight lambda of the conditional replaced-token-detection loss (the paper's BERT value 0.005).",
    )
    masking_ratio: float = opt(
        DIFFCSE_MASKING_RATIO,
        "Fraction of tokens masked (BERT's 80/10/10) before the generator fills them (the paper's BERT "
        "value 0.30).",
    )
    edit_positions: str = opt(
        "all",
        "Positions of x'' taken from the generator: 'all' (x'' = G(x'), every real token but the first; the "
        "paper and its code) or 'masked' (ELECTRA's replacement of the masked tokens only).",
    )
    generator_output: str = opt(
        "argmax",
        "The generator's token: 'argmax' (the authors' code) or 'sample' (a draw from its softmax, as the "
        "abstract words it and ELECTRA does).",
    )
    rtd_positions: str = opt(
        "tokens",
        "Positions L_RTD averages over: 'tokens' (every real token of each sentence, [CLS] and [SEP] included; "
        "our reading of the paper's sum over t) or 'padded' (every padded position, the authors' code).",
    )

    uses: ClassVar[tuple[str, ...]] = ("model.generator",)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_non_negative("objective.lambda_weight", self.lambda_weight)
        if not 0.0 < self.masking_ratio <= 1.0:
            raise ConfigError(f"objective.masking_ratio must be in (0, 1], got {self.masking_ratio!r}")
        check_choice("objective.edit_positions", self.edit_positions, DIFFCSE_EDITS)
        check_choice("objective.generator_output", self.generator_output, DIFFCSE_GENERATOR_OUTPUTS)
        check_choice("objective.rtd_positions", self.rtd_positions, DIFFCSE_RTD_POSITIONS)

    def check(self, cfg: TrainConfig) -> None:
        if not cfg.model.generator:
            raise ConfigError(
                "diffcse needs model.generator: a masked-LM folder or hub id with the encoder's vocabulary "
                "(the paper: distilbert-base-uncased for bert-base-uncased)"
            )
        if self.mlm_weight > 0:
            raise ConfigError(
                "diffcse's replaced-token loss takes the place of the auxiliary MLM term: set "
                "objective.mlm_weight=0"
            )
        if self.rtd_positions == "padded" and cfg.training.gradient_cache_chunk > 0:
            raise ConfigError(
                "objective.rtd_positions=padded averages over the batch's padded length, which GradCache's "
                "chunks trim: use rtd_positions=tokens with training.gradient_cache_chunk"
            )


#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "diffcse",
        DiffCSEOptions,
        "lines",
        Paper(
            "Yung-Sung Chuang, Rumen Dangovski, Hongyin Luo, Yang Zhang, Shiyu Chang, Marin Soljacic, "
            "Shang-Wen Li, Wen-tau Yih, Yoon Kim and James Glass",
            "DiffCSE: Difference-based Contrastive Learning for Sentence Embeddings",
            "NAACL 2022",
            "@inproceedings{chuang2022diffcse, title={DiffCSE: Difference-based Contrastive Learning for "
            "Sentence Embeddings}, author={Chuang, Yung-Sung and Dangovski, Rumen and Luo, Hongyin and Zhang, "
            "Yang and Chang, Shiyu and Soljacic, Marin and Li, Shang-Wen and Yih, Wen-tau and Kim, Yoon and "
            "Glass, James}, booktitle={NAACL}, year={2022}}",
            78.49,
            f"{STS7}, unsupervised",
            url="https://aclanthology.org/2022.naacl-main.311",
        ),
        "DiffCSE (Chuang et al., 2022): SimCSE + replaced-token detection conditioned on the sentence vector",
    )
)
