from sentcl.objectives.base import OBJECTIVES, Objective
from sentcl.objectives.infonce import InfoNCE, info_nce
from sentcl.objectives.mlm import add_mlm, mask_tokens, mlm_loss
from sentcl.objectives.next_sentence import NextSentence
from sentcl.objectives.quick_thoughts import QuickThoughts, quick_thoughts_embedding, quick_thoughts_loss
from sentcl.objectives.supervised import SupervisedInfoNCE, supervised_info_nce
from sentcl.objectives.triplet import CutoffTriplet, weak_strong_triplet

__all__ = [
    "OBJECTIVES",
    "CutoffTriplet",
    "InfoNCE",
    "NextSentence",
    "Objective",
    "QuickThoughts",
    "SupervisedInfoNCE",
    "add_mlm",
    "info_nce",
    "mask_tokens",
    "mlm_loss",
    "quick_thoughts_embedding",
    "quick_thoughts_loss",
    "supervised_info_nce",
    "weak_strong_triplet",
]
