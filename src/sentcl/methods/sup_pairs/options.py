"""SupPairsOptions and the record of ``sup_pairs``, torch-free: what a recipe may set, checked once here,
and the paper (Tianyu Gao et al.: SimCSE: Simple Contrastive Learning of Sentence Embeddings) with its link.

The builder (``build.py``) receives an instance of SupPairsOptions and trusts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sentcl.config.method_record import MethodRecord, Paper, register_method
from sentcl.config.objective import (
    InfoNCEOptions,
)
from sentcl.methods.unsup_simcse.options import SIMCSE

if TYPE_CHECKING:
    pass


@dataclass
class SupPairsOptions(InfoNCEOptions):
    pass


#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "sup_pairs",
        SupPairsOptions,
        "pairs",
        Paper(
            **SIMCSE,
            headline=84.2,
            headline_what="STS-B dev (Spearman x 100), BERT-base, entailment pairs only (Table 4)",
        ),
        "SimCSE (Gao et al., 2021), supervised pairs without hard negatives (Table 4 / Table 7)",
    )
)
