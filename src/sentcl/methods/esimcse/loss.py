"""ESimCSE's loss (Wu et al. 2022, eq. 4): InfoNCE with a queue of momentum-encoded negatives.

z (B, 2, D) = (h_i, h_i^+): view 0 the sentence, view 1 its word-repetition copy
(:mod:`sentcl.data.augment.repetition`). ``queue`` (Q, D) holds sentence embeddings of the preceding
batches from the momentum encoder (:class:`sentcl.methods.momentum.MomentumQueue`), no gradient:

    l_i = -log  e^{cos(h_i, h_i^+)/tau} / ( sum_j e^{cos(h_i, h_j^+)/tau} + sum_m e^{cos(h_i, q_m)/tau} )

With an empty queue (the first step) this is unsupervised SimCSE's eq. 1.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from sentcl.defaults import TEMPERATURE
from sentcl.objectives.base import Objective
from sentcl.objectives.infonce import info_nce
from sentcl.similarity import cosine_matrix


def queue_info_nce(anchors: Tensor, positives: Tensor, queue: Tensor | None, temperature: float) -> Tensor:
    """The shared InfoNCE over [cos(h_i, h_j^+) | cos(h_i, q_m)] / tau, target j = i.

    anchors, positives (B, D); queue (Q, D) or None.
    """
    extra = None
    if queue is not None and queue.numel():
        queue = queue.detach().to(anchors.device, anchors.dtype)
        extra = cosine_matrix(anchors, queue)  # (B, Q)
    return info_nce(anchors, positives, temperature, extra_similarities=extra)  # (B, B + Q) logits


class ESimCSELoss(Objective):
    """z (B, 2, D) = (sentence, word-repetition view); keyword ``queue`` (Q, D) of momentum negatives."""

    num_views = 2
    #: keyword inputs that are embeddings too (the Matryoshka wrapper cuts them to the same prefix)
    embedding_meta = ("queue",)

    def __init__(self, temperature: float = TEMPERATURE) -> None:
        super().__init__()  # checked once, by the options class
        self.temperature = temperature

    def forward(self, z: Tensor, queue: Tensor | None = None, **meta: Any) -> dict[str, Tensor]:
        self.check_views(z)
        if queue is not None and (queue.dim() != 2 or (queue.numel() and queue.size(1) != z.size(-1))):
            raise ValueError(f"queue must be (Q, {z.size(-1)}), got {tuple(queue.shape)}")
        loss = queue_info_nce(z[:, 0], z[:, 1], queue, self.temperature)  # z[:, v]: (B, D)
        size = torch.tensor(0.0 if queue is None else float(queue.size(0)))
        return {"loss": loss, "queue_size": size}
