"""The shared objectives, on (B, V, D) embeddings: InfoNCE, supervised InfoNCE with hard negatives, the MLM
term, Matryoshka and the teacher targets. A method's own loss lives in its package (``sentcl/methods/<name>/loss.py``).
"""

from sentcl.objectives.base import Objective
from sentcl.objectives.infonce import InfoNCE, info_nce
from sentcl.objectives.mlm import MaskedLMObjective, add_mlm, mask_tokens, mlm_loss
from sentcl.objectives.supervised import SupervisedInfoNCE, supervised_info_nce

__all__ = [
    "InfoNCE",
    "MaskedLMObjective",
    "Objective",
    "SupervisedInfoNCE",
    "add_mlm",
    "info_nce",
    "mask_tokens",
    "mlm_loss",
    "supervised_info_nce",
]
