"""Token cutoff + triplet loss: InfoNCE on a weak view plus a margin between weak and strong views.

    loss = InfoNCE(s, s*) + lambda * mean_i max(0, m + sim(s_i, s_i**) - sim(s_i, s_i*))

s is the anchor sentence, s* its weak view (10% token cutoff) and s** its strong view (20% cutoff);
sim is cosine similarity. InfoNCE is unsupervised SimCSE with the weak view as the positive and the
other sentences' weak views as in-batch negatives (temperature 0.07 for BERT-base, 0.05 for RoBERTa).

Term order. The source paper prints the triplet term with the two similarities swapped, which would
push the anchor towards the strong view; the intended order, implemented here, keeps the anchor
closer to its weak view than to its strong view by at least m.

Margin. We could not check the paper's value of m; the default 0.2 is our choice (cosine
similarities lie in [-1, 1], so m = 0.2 asks for a clear but small gap). lambda defaults to 1.

The LeakyReLU head on the strong view is model-side (the encoder's ``head_activation``).
"""

from __future__ import annotations

from typing import Any

from torch import Tensor
from torch.nn import functional as F

from sentcl.objectives.base import OBJECTIVES, Objective
from sentcl.objectives.infonce import info_nce


def weak_strong_triplet(anchors: Tensor, weak: Tensor, strong: Tensor, margin: float) -> Tensor:
    """mean_i max(0, m + cos(s_i, s_i**) - cos(s_i, s_i*)) for anchors, weak, strong each (B, D)."""
    sim_weak = F.cosine_similarity(anchors, weak, dim=-1)  # (B,)
    sim_strong = F.cosine_similarity(anchors, strong, dim=-1)  # (B,)
    return F.relu(margin + sim_strong - sim_weak).mean()


@OBJECTIVES.register("cutoff_triplet")
class CutoffTriplet(Objective):
    """z (B, 3, D): view 0 = anchor s, view 1 = weak view s* (10% cutoff), view 2 = strong view s** (20%)."""

    num_views = 3

    def __init__(self, temperature: float = 0.07, margin: float = 0.2, triplet_weight: float = 1.0) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        if margin < 0:
            raise ValueError(f"margin must be non-negative, got {margin}")
        if triplet_weight < 0:
            raise ValueError(f"triplet_weight must be non-negative, got {triplet_weight}")
        self.temperature = temperature
        self.margin = margin
        self.triplet_weight = triplet_weight

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        self.check_views(z)
        anchors, weak, strong = z[:, 0], z[:, 1], z[:, 2]  # (B, D) each
        contrastive = info_nce(anchors, weak, self.temperature)
        triplet = weak_strong_triplet(anchors, weak, strong, self.margin)
        return {
            "loss": contrastive + self.triplet_weight * triplet,
            "infonce": contrastive.detach(),
            "triplet": triplet.detach(),
        }
