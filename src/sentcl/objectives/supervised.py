"""Supervised SimCSE with NLI hard negatives (Gao et al. 2021, eq. 5).

    l_i = -log  e^{sim(h_i, h_i^+)/tau} / sum_j ( e^{sim(h_i, h_j^+)/tau} + alpha^{1[j=i]} e^{sim(h_i, h_j^-)/tau} )

h_i is the premise (anchor), h_i^+ its entailment hypothesis (positive) and h_i^- its contradiction
hypothesis (hard negative); every other example's positive and hard negative are in-batch negatives.

Hard-negative weight. The paper's Table 7 reports a weight alpha on the anchor's *own* hard negative
(alpha = 1 is best). Like the SimCSE code, we take it in log space: ``hard_negative_weight`` w is added
to the logit sim(h_i, h_i^-)/tau, which multiplies e^{sim(h_i, h_i^-)/tau} by alpha = e^w. So w = 0
(the default) is alpha = 1, the paper's best setting, and plain cross-entropy over the B x 2B logits.

``similarity="dot"`` scores h_i . h_j instead of the cosine (SimCSE Table D.1's "N/A" column, tau = 1).

Extra hard negatives (e.g. the neutral hypotheses) are extra views: z is (B, 2 + k, D) and every view
from index 2 on adds a B-column block of hard negatives; w goes to the diagonal of every such block.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from sentcl.defaults import TEMPERATURE
from sentcl.objectives.base import Objective
from sentcl.objectives.infonce import similarity_matrix


def supervised_info_nce(
    anchors: Tensor,
    positives: Tensor,
    hard_negatives: Tensor,
    temperature: float,
    hard_negative_weight: float = 0.0,
    similarity: str = "cosine",
) -> Tensor:
    """Mean of eq. 5 over the batch: anchors (B, D), positives (B, D), hard_negatives (K, B, D).

    The logits of anchor i are [cos(h_i, h_j^+)/tau]_j ++ [cos(h_i, h_j^{-,k})/tau]_j for k = 1..K
    (B x (1 + K) B), with w added to the K entries (i, i) of the hard-negative blocks; target i.
    """
    if hard_negatives.dim() != 3 or hard_negatives.shape[1:] != anchors.shape:
        raise ValueError(
            f"hard_negatives must be shaped (K, {anchors.size(0)}, {anchors.size(1)}), got {tuple(hard_negatives.shape)}"
        )
    batch = anchors.size(0)
    num_blocks = hard_negatives.size(0)
    flat_negatives = hard_negatives.reshape(num_blocks * batch, -1)  # (K*B, D), block k = rows k*B..k*B+B-1
    candidates = torch.cat([positives, flat_negatives], dim=0)  # ((1+K)*B, D)
    logits = similarity_matrix(anchors, candidates, similarity) / temperature  # (B, (1+K)*B)
    if hard_negative_weight != 0.0:
        rows = torch.arange(batch, device=anchors.device)  # (B,)
        bonus = torch.zeros_like(logits)  # (B, (1+K)*B)
        for block in range(1, num_blocks + 1):
            bonus[rows, block * batch + rows] = hard_negative_weight
        logits = logits + bonus
    targets = torch.arange(batch, device=anchors.device)  # (B,)
    return torch.nn.functional.cross_entropy(logits, targets)


class SupervisedInfoNCE(Objective):
    """Supervised SimCSE: view 0 = premise h_i, view 1 = entailment h_i^+, views 2.. = hard negatives h_i^-.

    ``num_hard_negatives`` (k) sets how many views the objective expects: 2 + k.
    """

    def __init__(
        self,
        temperature: float = TEMPERATURE,
        hard_negative_weight: float = 0.0,
        num_hard_negatives: int = 1,
        similarity: str = "cosine",
    ) -> None:
        super().__init__()  # temperature and similarity checked once, by the options class
        self.similarity = similarity
        if num_hard_negatives < 1:
            raise ValueError(f"num_hard_negatives must be at least 1, got {num_hard_negatives}")
        self.temperature = temperature
        self.hard_negative_weight = float(hard_negative_weight)
        self.num_views = 2 + num_hard_negatives

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        self.check_views(z)
        anchors, positives = z[:, 0], z[:, 1]  # (B, D) each
        hard_negatives = z[:, 2:].transpose(0, 1)  # (k, B, D)
        loss = supervised_info_nce(
            anchors, positives, hard_negatives, self.temperature, self.hard_negative_weight, self.similarity
        )
        return {"loss": loss}
