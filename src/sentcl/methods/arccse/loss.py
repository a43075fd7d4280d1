"""ArcCSE's losses (Zhang et al. 2022, ACL): an additive angular margin on the positive, plus a triplet term.

z (B, 4, D) = (h_i, h_i^+, h_i', h_i''): the sentence, its dropout copy, and two masked views, h_i'' masking
more tokens than h_i' (:class:`sentcl.data.augment.nested_spans.NestedSpanMask`). With theta_ij the angle between
h_i and h_j^+:

    ArcCon:  l_i = -log e^{cos(theta_ii + m)/tau} / ( e^{cos(theta_ii + m)/tau} + sum_{j != i} e^{cos(theta_ij)/tau} )
             m = 10 degrees, tau = 0.05
    triplet: t_i = max(0, angle(h_i, h_i') - angle(h_i, h_i'') + m_t)

    loss = mean_i l_i + w * mean_i t_i

The triplet term asks the more-masked view to lie farther (in angle) from the sentence than the less-masked
one: x entails x' entails x''. Not verified against the paper's text (recorded in the recipe and README):
the triplet margin m_t (default 0) and weight w (default 1), the masking ratios, and whether the triplet is
written on angles (here) or cosines. cos(theta + m) is used as printed, with no ArcFace-style fallback when
theta + m exceeds pi.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor
from torch.nn import functional as F

from sentcl.defaults import TEMPERATURE
from sentcl.objectives.base import Objective
from sentcl.objectives.infonce import info_nce_from_similarities
from sentcl.similarity import cosine_matrix

#: arccos has an infinite derivative at +-1: cosines are clamped to [-1 + eps, 1 - eps] before it
ARCCOS_EPS = 1e-6


def angles(cosines: Tensor) -> Tensor:
    """theta = arccos(cos), clamped away from +-1 so that the gradient stays finite."""
    return torch.acos(cosines.clamp(-1 + ARCCOS_EPS, 1 - ARCCOS_EPS))


def arc_con(anchors: Tensor, positives: Tensor, margin: float, temperature: float) -> Tensor:
    """ArcCon averaged over the batch: the shared InfoNCE with the diagonal logit cos(theta_ii + m); anchors,
    positives (B, D)."""
    cos = cosine_matrix(anchors, positives)  # (B, B)
    eye = torch.eye(cos.size(0), dtype=torch.bool, device=cos.device)  # (B, B)
    margined = torch.cos(angles(cos.diagonal()) + margin)  # (B,)
    logits = torch.where(eye, torch.diag_embed(margined), cos)  # (B, B)
    return info_nce_from_similarities(logits, temperature)


def angular_triplet(anchors: Tensor, weak: Tensor, strong: Tensor, margin: float) -> Tensor:
    """mean_i max(0, angle(h_i, h_i') - angle(h_i, h_i'') + m_t); anchors, weak, strong (B, D)."""
    near = angles(F.cosine_similarity(anchors, weak, dim=-1))  # (B,)
    far = angles(F.cosine_similarity(anchors, strong, dim=-1))  # (B,)
    return F.relu(near - far + margin).mean()


class ArcCSELoss(Objective):
    """z (B, 4, D) = (sentence, dropout copy, less-masked view, more-masked view); margins in degrees."""

    num_views = 4

    def __init__(
        self,
        temperature: float = TEMPERATURE,
        margin_degrees: float = 10.0,
        triplet_margin_degrees: float = 0.0,
        triplet_weight: float = 1.0,
    ) -> None:
        super().__init__()  # checked once, by the options class (ArcCSEOptions)
        self.temperature = temperature
        self.margin = math.radians(margin_degrees)
        self.triplet_margin = math.radians(triplet_margin_degrees)
        self.triplet_weight = triplet_weight

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        self.check_views(z)
        anchors, copies, weak, strong = z[:, 0], z[:, 1], z[:, 2], z[:, 3]  # (B, D) each
        arc = arc_con(anchors, copies, self.margin, self.temperature)
        triplet = angular_triplet(anchors, weak, strong, self.triplet_margin)
        return {
            "loss": arc + self.triplet_weight * triplet,
            "arccon": arc.detach(),
            "triplet": triplet.detach(),
        }
