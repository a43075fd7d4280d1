"""Token cutoff + triplet loss (the unpublished token-cutoff triplet note): SimCSE's NT-Xent plus a triplet term on weak and strong cutoff views.

The paper's form (``form="paper"``, the default), z (B, 4, D) = (s, s', s*, s**):

    loss = NT-Xent(s, s') + lambda * mean_i max(0, m + sim(s_i, s_i**) - sim(s_i, s_i*)),   m = 0

NT-Xent is unsupervised SimCSE's InfoNCE on the pair (s, s'): the same sentence encoded twice, dropout
being the only noise, with the other sentences' s' as in-batch negatives. s* is the weak view (10% of the
tokens cut to [UNK]) and s** the strong view (20%); only s** goes through the LeakyReLU head (model-side,
the encoder's per-view ``head_activation``). The printed formula has no margin: m defaults to 0.

Our variant (``form="weak_positive"``), z (B, 3, D) = (s, s*, s**): the weak view is InfoNCE's positive
(no dropout-only copy) and the recipe adds a margin m = 0.2; it is how sentcl trained before following
the paper, kept to compare with.

Term order (``order``). Han, Jeong and Chae's note prints the triplet term as max(0, sim(s, s*) − sim(s, s**)); minimising
that pushes the anchor towards the *strong* view. Its stated intent is the opposite: the weakly cut view
should stay closer to the anchor than the strongly cut one. sentcl's default, ``order="weak_closer"``,
computes max(0, m + sim(s, s**) − sim(s, s*)), the order that makes the weak view closer (the intent, not
the printed formula); ``order="as_printed"`` computes the printed order, max(0, m + sim(s, s*) − sim(s, s**)).
sim is cosine similarity.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor
from torch.nn import functional as F

from sentcl.methods.cutoff_triplet.options import CUTOFF_TRIPLET_TEMPERATURE, TRIPLET_ORDERS
from sentcl.objectives.base import Objective
from sentcl.objectives.infonce import info_nce


def weak_strong_triplet(
    anchors: Tensor, weak: Tensor, strong: Tensor, margin: float, order: str = "weak_closer"
) -> Tensor:
    """mean_i max(0, m + cos(s_i, s_i**) - cos(s_i, s_i*)) for anchors, weak, strong each (B, D);
    ``order="as_printed"`` swaps the two similarities: mean_i max(0, m + cos(s_i, s_i*) - cos(s_i, s_i**))."""
    if order not in TRIPLET_ORDERS:
        raise ValueError(f"unknown triplet order {order!r}; valid: {', '.join(TRIPLET_ORDERS)}")
    sim_weak = F.cosine_similarity(anchors, weak, dim=-1)  # (B,)
    sim_strong = F.cosine_similarity(anchors, strong, dim=-1)  # (B,)
    if order == "as_printed":
        return F.relu(margin + sim_weak - sim_strong).mean()
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
        order: str = "weak_closer",
    ) -> None:
        super().__init__()  # checked once, by the options class (CutoffTripletOptions)
        self.temperature = temperature
        self.margin = margin
        self.triplet_weight = triplet_weight
        self.form = form
        self.order = order
        self.num_views = 4 if form == "paper" else 3

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        self.check_views(z)
        if self.form == "paper":
            anchors, copies, weak, strong = z[:, 0], z[:, 1], z[:, 2], z[:, 3]  # (B, D) each
            contrastive = info_nce(anchors, copies, self.temperature)
        else:
            anchors, weak, strong = z[:, 0], z[:, 1], z[:, 2]  # (B, D) each
            contrastive = info_nce(anchors, weak, self.temperature)
        triplet = weak_strong_triplet(anchors, weak, strong, self.margin, self.order)
        return {
            "loss": contrastive + self.triplet_weight * triplet,
            "infonce": contrastive.detach(),
            "triplet": triplet.detach(),
        }
