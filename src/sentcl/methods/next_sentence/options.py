"""NextSentenceOptions and the record of ``next_sentence``, torch-free: what a recipe may set, checked once here,
and the paper (Tianyu Gao et al.: SimCSE: Simple Contrastive Learning of Sentence Embeddings) with its link.

The builder (``build.py``) receives an instance of NextSentenceOptions and trusts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from sentcl.config.method_record import MethodRecord, Paper, register_method
from sentcl.config.objective import (
    TWO_ENCODER_KEYS,
    TemperatureOptions,
)
from sentcl.methods.unsup_simcse.options import SIMCSE

if TYPE_CHECKING:
    pass


@dataclass
class NextSentenceOptions(TemperatureOptions):
    uses: ClassVar[tuple[str, ...]] = ("data.next_sentence_window", *TWO_ENCODER_KEYS)


#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "next_sentence",
        NextSentenceOptions,
        "next_sentence",
        Paper(
            **SIMCSE,
            headline=67.1,
            headline_what="STS-B dev (Spearman x 100), BERT-base, next-sentence positives, one encoder (Table 2)",
        ),
        "SimCSE Table 2: the next sentence (or one of the next three) as the positive",
    )
)
