"""InfoNCE over cosine similarity (unsupervised SimCSE, the paper's eq. 1).

    l_i = -log  exp(sim(h_i, h_i^+) / tau) / sum_j exp(sim(h_i, h_j^+) / tau)

The positive h_i^+ is in the denominator; the other sentences' second views
are the in-batch negatives.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from sentcl.modeling.pooling import cosine_matrix
from sentcl.objectives.base import OBJECTIVES, Objective


def info_nce(
    anchors: Tensor, candidates: Tensor, temperature: float, targets: Tensor | None = None
) -> Tensor:
    """Mean cross-entropy of cos(anchor_i, candidate_j) / tau; anchor i's positive is candidate targets[i].

    anchors (B, D), candidates (M, D); targets default to arange(B).
    """
    logits = cosine_matrix(anchors, candidates) / temperature  # (B, M)
    if targets is None:
        targets = torch.arange(anchors.size(0), device=anchors.device)
    return torch.nn.functional.cross_entropy(logits, targets)


@OBJECTIVES.register("infonce")
class InfoNCE(Objective):
    """Unsupervised SimCSE: view 0 of each sentence is the anchor, view 1 its positive."""

    num_views = 2

    def __init__(self, temperature: float = 0.05) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        self.temperature = temperature

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        self.check_views(z)
        anchors, positives = z[:, 0], z[:, 1]  # (B, D) each
        return {"loss": info_nce(anchors, positives, self.temperature)}
