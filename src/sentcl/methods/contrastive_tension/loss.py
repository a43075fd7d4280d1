"""Contrastive Tension with in-batch negatives (Carlsson et al. 2021; the in-batch form as sentence-transformers'
``ContrastiveTensionLossInBatchNegatives`` reads the paper).

Two independent encoders start as copies of the same model: f (the one trained and saved) and g (its copy,
trained beside it and dropped at the end). Each sentence s_i of the batch goes through both:

    S_ij = sim(f(s_i), g(s_j)) · exp(w)        (B, B), w a learnt log-scale starting at log 20
    L = (CE(S, arange(B)) + CE(S^T, arange(B))) / 2

The positive of f(s_i) is g(s_i), the same sentence through the other copy; the other sentences are the
negatives, in both directions. Each direction is the shared InfoNCE (``sentcl.objectives.infonce``) with
temperature exp(-w).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch
from torch import Tensor, nn

from sentcl.methods.views import SENTENCE_IDS, SENTENCE_MASK, trim_tokens
from sentcl.objectives.base import Objective
from sentcl.objectives.infonce import info_nce


def contrastive_tension_loss(f: Tensor, g: Tensor, log_scale: Tensor, similarity: str = "cosine") -> Tensor:
    """(CE over rows + CE over columns) / 2 of sim(f_i, g_j) · exp(log_scale): f, g (B, D) each."""
    temperature = torch.exp(-log_scale)  # 1 / scale
    return (
        info_nce(f, g, temperature, similarity=similarity)
        + info_nce(g, f, temperature, similarity=similarity)
    ) / 2


class TensionCopy(nn.Module):
    """g, the second encoder (a copy of f as training starts), and the learnt log-scale of the logits."""

    def __init__(self, encoder: nn.Module, scale: float, learn_scale: bool) -> None:
        super().__init__()
        self.encoder = copy.deepcopy(encoder)
        self.log_scale = nn.Parameter(torch.tensor(math.log(scale)), requires_grad=learn_scale)

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask)  # (B, D)


class ContrastiveTension(Objective):
    """z (B, 1, D): f(s_i); the metadata holds the sentences' token ids, which g encodes here."""

    num_views = 1

    def __init__(self, scale: float = 20.0, learn_scale: bool = True, similarity: str = "cosine") -> None:
        super().__init__()
        self.scale, self.learn_scale, self.similarity = scale, learn_scale, similarity
        self._copy: tuple[TensionCopy, ...] = ()  # not a submodule: the loop trains it as attach's module

    def attach(self, model: nn.Module) -> dict[str, nn.Module]:
        partner = TensionCopy(model, self.scale, self.learn_scale)
        self._copy = (partner,)
        return {"tension_copy": partner}

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        self.check_views(z)
        if not self._copy:
            raise RuntimeError("ContrastiveTension.attach(model) must run before training")
        partner = self._copy[0]
        ids, mask = trim_tokens(meta[SENTENCE_IDS], meta[SENTENCE_MASK])  # (B, L) each
        g = partner(ids, mask).float()  # (B, D)
        loss = contrastive_tension_loss(z[:, 0], g, partner.log_scale, self.similarity)
        return {"loss": loss, "scale": partner.log_scale.detach().exp()}
