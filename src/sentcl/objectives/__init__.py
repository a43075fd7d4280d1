from sentcl.objectives.base import Objective
from sentcl.objectives.infonce import InfoNCE, info_nce
from sentcl.objectives.mlm import MaskedLMObjective, add_mlm, mask_tokens, mlm_loss
from sentcl.objectives.quick_thoughts import QuickThoughts, quick_thoughts_embedding, quick_thoughts_loss
from sentcl.objectives.supervised import SupervisedInfoNCE, supervised_info_nce
from sentcl.objectives.triplet import CutoffTriplet, weak_strong_triplet

__all__ = [
    "CutoffTriplet",
    "InfoNCE",
    "MaskedLMObjective",
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
