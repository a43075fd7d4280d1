"""InfoNCE over cosine similarity (unsupervised SimCSE, the paper's eq. 1).

    l_i = -log  exp(sim(h_i, h_i^+) / tau) / sum_j exp(sim(h_i, h_j^+) / tau)

The positive h_i^+ is in the denominator; the other sentences' second views
are the in-batch negatives.

Options (not the paper's defaults):

- ``similarity="dot"``: sim(h_i, h_j) = h_i . h_j instead of the cosine (SimCSE Table D.1's "N/A" column,
  trained with tau = 1).
- ``symmetric=True`` (the NT-Xent form of Chen, Kornblith, Norouzi and Hinton, "A Simple Framework for
  Contrastive Learning of Visual Representations", NOT SimCSE's eq. 1): the 2N views interleaved [A_1, B_1, A_2, B_2, ...]
  (rows 2i and 2i+1 are the two views of sentence i), a 2N x 2N cosine matrix over all views with its diagonal
  masked, and cross-entropy for every row, the target of row 2i being 2i+1 and of 2i+1 being 2i. Each view is
  an anchor, and the other view of its own side is a negative too (2N - 2 negatives instead of N - 1).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from sentcl.config.objective import SIMILARITIES
from sentcl.defaults import TEMPERATURE
from sentcl.objectives.base import Objective
from sentcl.similarity import cosine_matrix


def similarity_matrix(a: Tensor, b: Tensor, similarity: str = "cosine") -> Tensor:
    """sim(a_i, b_j) for all pairs, cosine or dot product: (N, D), (M, D) -> (N, M)."""
    if similarity == "cosine":
        return cosine_matrix(a, b)  # (N, M)
    if similarity == "dot":
        return a @ b.T  # (N, M)
    raise ValueError(f"unknown similarity {similarity!r}; valid: {', '.join(SIMILARITIES)}")


def info_nce_from_similarities(
    similarities: Tensor, temperature: float, targets: Tensor | None = None
) -> Tensor:
    """Mean cross-entropy of similarities / tau; row i's positive is column targets[i] (default i).

    similarities (B, M): the methods that change a logit before the softmax (ArcCSE's margin on the positive)
    or add negatives of their own (a queue, mixed negatives) call this with their matrix.
    """
    if targets is None:
        targets = torch.arange(similarities.size(0), device=similarities.device)
    return torch.nn.functional.cross_entropy(similarities / temperature, targets)


def info_nce(
    anchors: Tensor,
    candidates: Tensor,
    temperature: float,
    targets: Tensor | None = None,
    similarity: str = "cosine",
    extra_similarities: Tensor | None = None,
) -> Tensor:
    """Mean cross-entropy of sim(anchor_i, candidate_j) / tau; anchor i's positive is candidate targets[i].

    anchors (B, D), candidates (M, D); targets default to arange(B). ``extra_similarities`` (B, K): more
    negatives' similarities to each anchor, appended to its denominator (ESimCSE's queue, MixCSE's mixes).
    """
    logits = similarity_matrix(anchors, candidates, similarity)  # (B, M)
    if extra_similarities is not None:
        logits = torch.cat([logits, extra_similarities], dim=1)  # (B, M + K)
    return info_nce_from_similarities(logits, temperature, targets)


def symmetric_info_nce(views: Tensor, temperature: float, similarity: str = "cosine") -> Tensor:
    """The symmetric (NT-Xent) loss: views (2N, D) interleaved (rows 2i, 2i+1 = sentence i); CE over the masked 2N x 2N matrix."""
    rows = views.size(0)
    if rows % 2:
        raise ValueError(f"symmetric InfoNCE needs an even number of interleaved views, got {rows}")
    logits = similarity_matrix(views, views, similarity) / temperature  # (2N, 2N)
    eye = torch.eye(rows, dtype=torch.bool, device=views.device)  # (2N, 2N)
    logits = logits.masked_fill(eye, float("-inf"))
    targets = torch.arange(rows, device=views.device) ^ 1  # (2N,): 2i -> 2i+1, 2i+1 -> 2i
    return torch.nn.functional.cross_entropy(logits, targets)


class InfoNCE(Objective):
    """Unsupervised SimCSE: view 0 of each sentence is the anchor, view 1 its positive."""

    num_views = 2

    def __init__(
        self, temperature: float = TEMPERATURE, similarity: str = "cosine", symmetric: bool = False
    ) -> None:
        super().__init__()  # values checked once, by the options class (sentcl.config.objective)
        self.temperature = temperature
        self.similarity = similarity
        self.symmetric = symmetric

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        self.check_views(z)
        if self.symmetric:
            views = z.reshape(-1, z.size(-1))  # (B, 2, D) -> (2B, D): rows 2i, 2i+1 = views of sentence i
            return {"loss": symmetric_info_nce(views, self.temperature, self.similarity)}
        anchors, positives = z[:, 0], z[:, 1]  # (B, D) each
        return {"loss": info_nce(anchors, positives, self.temperature, similarity=self.similarity)}
