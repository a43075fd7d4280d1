"""CoSENT (Su 2022, "CoSENT: a more efficient sentence vector scheme than Sentence-BERT"): a ranking loss on
the cosine similarities of scored pairs.

For a batch of pairs (u_i, v_i) with gold scores s_i and cos_i = cos(u_i, v_i):

    L = log(1 + Σ_{(i, j): s_i > s_j} exp(λ (cos_j − cos_i))),   λ = 20

Every pair that the gold scores order (s_i > s_j) should have its cosine ordered the same way; only the
order of the scores matters, so any score scale (0..5, 0..1, labels 0/1) trains the same. Pairs with equal
scores contribute nothing. The sum is evaluated as a logsumexp over {0} ∪ {λ (cos_j − cos_i)}.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.nn import functional as F

from sentcl.methods.cosent.options import COSENT_SCALE
from sentcl.objectives.base import Objective

SCALE = COSENT_SCALE


def cosent_loss(u: Tensor, v: Tensor, scores: Tensor, scale: float = SCALE) -> Tensor:
    """CoSENT over pairs (u_i, v_i): u, v (B, D), scores (B,) -> scalar."""
    if u.shape != v.shape or u.dim() != 2:
        raise ValueError(f"CoSENT needs two (batch, dim) tensors, got {tuple(u.shape)} and {tuple(v.shape)}")
    if scores.shape != (u.size(0),):
        raise ValueError(f"CoSENT scores must be shaped ({u.size(0)},), got {tuple(scores.shape)}")
    cos = F.cosine_similarity(u, v, dim=-1)  # (B,)
    diff = scale * (cos[None, :] - cos[:, None])  # (B, B): [i, j] = λ (cos_j − cos_i)
    scores = scores.to(device=cos.device, dtype=cos.dtype)
    ordered = scores[:, None] > scores[None, :]  # (B, B): [i, j] = s_i > s_j
    terms = diff[ordered]  # (P,): one term per ordered pair
    zero = cos.new_zeros(1)  # (1,): the "1 +" inside the log
    return torch.logsumexp(torch.cat([zero, terms]), dim=0)  # (P + 1,) -> scalar


class CoSENT(Objective):
    """z (B, 2, D): view 0 = sentence 1, view 1 = sentence 2 of each scored pair; meta ``scores`` (B,)."""

    num_views = 2

    def __init__(self, scale: float = SCALE) -> None:
        super().__init__()  # checked once, by the options class (CoSENTOptions)
        self.scale = scale

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        self.check_views(z)
        unknown = set(meta) - {"scores"}
        if unknown or "scores" not in meta:
            raise ValueError(f"CoSENT needs exactly the meta 'scores' (B,), got {sorted(meta)}")
        scores = torch.as_tensor(meta["scores"])
        return {"loss": cosent_loss(z[:, 0], z[:, 1], scores, self.scale)}
