"""Token cutoff + triplet loss (seed 003): SimCSE's NT-Xent plus a triplet term on weak and strong cutoff views.

The paper's form (``form="paper"``, the default), z (B, 4, D) = (s, s', s*, s**):

    loss = NT-Xent(s, s') + lambda * mean_i max(0, m + sim(s_i, s_i**) - sim(s_i, s_i*)),   m = 0

NT-Xent is unsupervised SimCSE's InfoNCE on the pair (s, s'): the same sentence encoded twice, dropout
being the only noise, with the other sentences' s' as in-batch negatives. s* is the weak view (10% of the
tokens cut to [UNK]) and s** the strong view (20%); only s** goes through the LeakyReLU head (model-side,
the encoder's per-view ``head_activation``). The printed formula has no margin: m defaults to 0.

Our variant (``form="weak_positive"``), z (B, 3, D) = (s, s*, s**): the weak view is InfoNCE's positive
(no dropout-only copy) and the recipe adds a margin m = 0.2; it is how sentcl trained before following
the paper, kept to compare with.

Term order. The source paper prints the triplet term with the two similarities swapped, which would
push the anchor towards the strong view; the intended order, implemented here, keeps the anchor
closer to its weak view than to its strong view (by at least m). sim is cosine similarity.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor
from torch.nn import functional as F

from sentcl.method_options import CUTOFF_TRIPLET_TEMPERATURE
from sentcl.objectives.base import Objective
from sentcl.objectives.infonce import info_nce


def weak_strong_triplet(anchors: Tensor, weak: Tensor, strong: Tensor, margin: float) -> Tensor:
    """mean_i max(0, m + cos(s_i, s_i**) - cos(s_i, s_i*)) for anchors, weak, strong each (B, D)."""
    sim_weak = F.cosine_similarity(anchors, weak, dim=-1)  # (B,)
    sim_strong = F.cosine_similarity(anchors, strong, dim=-1)  # (B,)
    return F.relu(margin + sim_strong - sim_weak).mean()


class CutoffTriplet(Objective):
    """``form="paper"``: z (B, 4, D) = (anchor s, dropout copy s', weak view s*, strong view s**).
    ``form="weak_positive"``: z (B, 3, D) = (anchor s, weak view s*, strong view s**)."""

    def __init__(
        self,
        temperature: float = CUTOFF_TRIPLET_TEMPERATURE,
        margin: float = 0.0,
        triplet_weight: float = 1.0,
        form: str = "paper",
    ) -> None:
        super().__init__()  # checked once, by the options class (CutoffTripletOptions)
        self.temperature = temperature
        self.margin = margin
        self.triplet_weight = triplet_weight
        self.form = form
        self.num_views = 4 if form == "paper" else 3

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        self.check_views(z)
        if self.form == "paper":
            anchors, copies, weak, strong = z[:, 0], z[:, 1], z[:, 2], z[:, 3]  # (B, D) each
            contrastive = info_nce(anchors, copies, self.temperature)
        else:
            anchors, weak, strong = z[:, 0], z[:, 1], z[:, 2]  # (B, D) each
            contrastive = info_nce(anchors, weak, self.temperature)
        triplet = weak_strong_triplet(anchors, weak, strong, self.margin)
        return {
            "loss": contrastive + self.triplet_weight * triplet,
            "infonce": contrastive.detach(),
            "triplet": triplet.detach(),
        }
