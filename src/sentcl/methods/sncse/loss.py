"""SNCSE (Wang et al. 2022): InfoNCE plus the bidirectional margin loss on a soft negative (the negation).

Views per sentence: (h, h⁺, h_neg): the sentence under template 0, under template 1, and its negation
under template 1 (methods/sncse.py).

    Δ = cos(h, h_neg) − cos(h, h⁺)
    BML = ReLU(Δ + α) + ReLU(−Δ − β),   α = 0.1, β = 0.3
    loss = InfoNCE(h, h⁺; τ) + λ · mean_i BML_i,   λ = 1e-3

BML holds Δ within [−β, −α]: the negation is less similar to the sentence than the positive, by between α
and β. The negation is not an InfoNCE negative (it enters the BML only).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from sentcl.defaults import TEMPERATURE
from sentcl.objectives.base import Objective
from sentcl.objectives.infonce import info_nce


def bidirectional_margin_loss(
    h: Tensor, positive: Tensor, negation: Tensor, alpha: float, beta: float
) -> Tensor:
    """Per-sentence BML: (B, D) x3 -> (B,)."""
    cos = torch.nn.functional.cosine_similarity
    delta = cos(h, negation, dim=-1) - cos(h, positive, dim=-1)  # (B,)
    return torch.relu(delta + alpha) + torch.relu(-delta - beta)


class SNCSE(Objective):
    """InfoNCE on (h, h⁺) with in-batch negatives + ``bml_weight`` · BML(h, h⁺, h_neg)."""

    num_views = 3

    def __init__(
        self,
        temperature: float = TEMPERATURE,
        alpha: float = 0.1,
        beta: float = 0.3,
        bml_weight: float = 1e-3,
    ) -> None:
        super().__init__()  # checked once, by the options class (SNCSEOptions: 0 <= alpha <= beta)
        self.temperature, self.alpha, self.beta, self.bml_weight = temperature, alpha, beta, bml_weight

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        self.check_views(z)
        h, positive, negation = z[:, 0], z[:, 1], z[:, 2]  # (B, D) each
        contrastive = info_nce(h, positive, self.temperature)
        bml = bidirectional_margin_loss(h, positive, negation, self.alpha, self.beta).mean()
        return {
            "loss": contrastive + self.bml_weight * bml,
            "infonce": contrastive.detach(),
            "bml": bml.detach(),
        }
