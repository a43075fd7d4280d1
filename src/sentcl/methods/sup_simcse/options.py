"""SupSimCSEOptions and the record of ``sup_simcse``, torch-free: what a recipe may set, checked once here,
and the paper (Tianyu Gao et al.: SimCSE: Simple Contrastive Learning of Sentence Embeddings) with its link.

The builder (``build.py``) receives an instance of SupSimCSEOptions and trusts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from sentcl.config.method_record import STS7, MethodRecord, Paper, register_method
from sentcl.config.objective import (
    SIMILARITIES,
    TemperatureOptions,
    similarity_option,
)
from sentcl.config.typed import (
    check_choice,
    opt,
)
from sentcl.methods.unsup_simcse.options import SIMCSE

if TYPE_CHECKING:
    pass


@dataclass
class SupSimCSEOptions(TemperatureOptions):
    hard_negative_weight: float = opt(
        0.0, "w added to the logit of the anchor's own hard negative (alpha = e^w; 0 is alpha = 1)."
    )
    similarity: str = similarity_option()

    uses: ClassVar[tuple[str, ...]] = ("data.use_neutral",)

    def min_batch(self) -> tuple[int, str]:
        """One triple learns: its contradiction is a negative beside the entailment (eq. 5)."""
        return 1, ""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("objective.similarity", self.similarity, SIMILARITIES)


#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "sup_simcse",
        SupSimCSEOptions,
        "nli_csv",
        Paper(**SIMCSE, headline=81.57, headline_what=f"{STS7}, supervised on SNLI+MNLI (Table 5)"),
        "SimCSE (Gao et al., 2021), supervised: NLI entailment positives, contradiction hard negatives",
    )
)
