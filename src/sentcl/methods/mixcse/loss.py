"""MixCSE's loss (Zhang et al. 2022, AAAI): InfoNCE plus detached mixed hard negatives in the denominator.

z (B, 2, D) = (h_i, h_i^+), two dropout views of sentence i as in unsupervised SimCSE. The mixed negative
of anchor i with the negative h_j^+ (j != i) is

    h~_ij = stopgrad( (lambda h_i^+ + (1 - lambda) h_j^+) / || lambda h_i^+ + (1 - lambda) h_j^+ ||_2 ),
    lambda = 0.2 (the paper's BERT-base setting; the authors' script passes --lambdas 0.6)

and the loss adds e^{cos(h_i, h~_ij)/tau} to anchor i's InfoNCE denominator:

    l_i = -log e^{cos(h_i, h_i^+)/tau} / ( sum_j e^{cos(h_i, h_j^+)/tau} + sum_{j in P(i)} e^{cos(h_i, h~_ij)/tau} )

The mix is of the pooled vectors as they are (as the authors' code mixes them); the normalisation of the
paper's formula does not change a cosine. Partners P(i) (``partners``):

- ``"one"`` (default): one mixed negative per anchor, with the next example of the batch, j = i + 1 mod B
  (batches are random, so a random negative: the paper's h_j^-; the authors' code pairs i with i + 1 too);
- ``"all"`` (ours): every j != i, B - 1 mixed negatives per anchor.

The authors' code also puts the other anchors' mixed negatives (and a mirrored z1-side mix) into each row;
that is not in the paper's formula and not implemented. Users report that MixCSE's published 77.66 is hard
to reproduce: the authors' repository (github.com/BDBC-KG-NLP/MixCSE_AAAI2022), its GitHub issue #3 reports an STS
average near 65 after following its README, and #6 further reproduction problems.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.nn import functional as F

from sentcl.defaults import TEMPERATURE
from sentcl.methods.mixcse.options import MIX_PARTNERS
from sentcl.objectives.base import Objective
from sentcl.objectives.infonce import info_nce
from sentcl.similarity import unit_rows

PARTNERS = MIX_PARTNERS


def mixed_negatives(positives: Tensor, lam: float, partners: str = "one") -> Tensor:
    """The detached, L2-normalised mixes lambda h_i^+ + (1 - lambda) h_j^+.

    positives (B, D) -> (B, D) for ``"one"`` (row i mixes with j = i + 1 mod B) or (B, B, D) for ``"all"``
    (entry (i, j) mixes i with j; the diagonal is h_i^+ itself and is masked by the loss).
    """
    h = positives.detach()
    if partners == "one":
        mix = lam * h + (1 - lam) * h.roll(-1, dims=0)  # (B, D): row i with row i + 1
    elif partners == "all":
        mix = lam * h[:, None, :] + (1 - lam) * h[None, :, :]  # (B, 1, D) + (1, B, D) -> (B, B, D)
    else:
        raise ValueError(f"unknown partners {partners!r}; valid: {', '.join(PARTNERS)}")
    return unit_rows(mix)


def mixcse_loss(
    anchors: Tensor, positives: Tensor, lam: float, temperature: float, partners: str = "one"
) -> Tensor:
    """MixCSE's l_i averaged over the batch: the shared InfoNCE with the mixes' similarities appended; anchors,
    positives (B, D)."""
    batch = anchors.size(0)
    if batch < 2:
        raise ValueError(
            "MixCSE mixes a positive with another sentence of the batch: batch size must be >= 2"
        )
    mixes = mixed_negatives(positives, lam, partners)
    if partners == "one":
        extra = F.cosine_similarity(anchors, mixes, dim=-1)[:, None]  # (B, 1)
    else:
        extra = F.cosine_similarity(anchors[:, None, :], mixes, dim=-1)  # (B, 1, D) vs (B, B, D) -> (B, B)
        eye = torch.eye(batch, dtype=torch.bool, device=anchors.device)  # (B, B)
        extra = extra.masked_fill(eye, float("-inf"))  # j = i is no negative
    return info_nce(anchors, positives, temperature, extra_similarities=extra)  # (B, B + 1) or (B, 2B) logits


class MixCSELoss(Objective):
    """z (B, 2, D) = (anchor, dropout positive); InfoNCE + detached mixed negatives (lambda, partners)."""

    num_views = 2

    def __init__(self, temperature: float = TEMPERATURE, lam: float = 0.2, partners: str = "one") -> None:
        super().__init__()  # checked once, by the options class (MixCSEOptions)
        self.temperature, self.lam, self.partners = temperature, lam, partners

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        self.check_views(z)
        return {"loss": mixcse_loss(z[:, 0], z[:, 1], self.lam, self.temperature, self.partners)}
