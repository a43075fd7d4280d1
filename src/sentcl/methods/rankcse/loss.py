"""RankCSE (Liu et al., ACL 2023): SimCSE + ranking consistency + listwise ranking distillation from teachers.

Two dropout views h_i, h_i' of each sentence (B, 2, D); the student's in-batch scores are S_ij = cos(h_i, h_j').
The teachers' vectors arrive as ``teacher_0 .. teacher_{K-1}`` ((B, D_k) each) and give
T_ij = sum_k w_k cos(t_i^(k), t_j^(k)) / tau_2 (the weighted average of the teachers' scaled similarity
matrices; the paper combines a DiffCSE and a SimCSE teacher with weights alpha and 1 - alpha). Then

    L = L_InfoNCE(S / tau_1) + beta * L_consistency + gamma * L_rank,

- ``L_InfoNCE``: SimCSE's eq. 1 on (h_i, h_i'), tau_1 = 0.05;
- ``L_consistency`` (ranking consistency between the two dropout views): the Jensen-Shannon divergence between
  each row of softmax(cos(h_i, h_j') / tau_1) and of softmax(cos(h_i', h_j) / tau_1), averaged over rows;
- ``L_rank``, ListNet: -1/B sum_i sum_{j != i} softmax_{j != i}(T_i)_j log softmax_{j != i}(S_i / tau_3)_j, the
  cross-entropy of the top-one probabilities with the diagonal (each sentence's own positive) left out on both
  sides, tau_3 = tau_2 / 2;
- ``L_rank``, ListMLE: the Plackett-Luce negative log-likelihood of the teachers' order of each row T_i (all B
  entries, the positive included) under the student's scores s = S_i / tau: with pi the teachers' descending
  order, -sum_m [ s_pi(m) - log sum_{n >= m} exp s_pi(n) ], averaged over the B positions and the rows.

The settings follow the paper as its public reproduction (github.com/perceptiveshawty/RankCSE, not the authors')
states them: tau_1 = tau_2 = 0.05, beta = gamma = 1, teachers weighted 0.33 / 0.67. Two points are our reading
where that code differs from the formula it names: the Jensen-Shannon divergence is computed exactly (the code
clamps log m from below at 1e-7, which zeroes it), and ties in the teachers' order are broken by column index
rather than by a random shuffle (cached teacher vectors tie only for a sentence repeated in a batch). ListMLE's
average over positions (instead of their sum) is the reproduction's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from sentcl.objectives.base import Objective
from sentcl.objectives.infonce import info_nce
from sentcl.objectives.teacher_targets import off_diagonal, teacher_logits
from sentcl.similarity import cosine_matrix


def listnet(teacher: Tensor, student: Tensor) -> Tensor:
    """-1/B sum_i sum_{j != i} softmax(teacher_i)_j log softmax(student_i)_j, the diagonal left out: scalar."""
    if teacher.size(0) < 2:
        return student.sum() * 0.0  # one sentence: nothing to rank
    eye = torch.eye(teacher.size(0), dtype=torch.bool, device=teacher.device)  # (B, B)
    q = torch.softmax(off_diagonal(teacher), dim=-1)  # (B, B), 0 on the diagonal
    log_p = torch.log_softmax(off_diagonal(student), dim=-1).masked_fill(eye, 0.0)  # (B, B)
    return -(q * log_p).sum(dim=-1).mean()


def listmle(teacher: Tensor, student: Tensor) -> Tensor:
    """The Plackett-Luce negative log-likelihood of each teacher row's descending order under the student's
    scores, averaged over positions and rows: scalar."""
    order = torch.sort(teacher, dim=-1, descending=True, stable=True).indices  # (B, B)
    s = torch.gather(student, 1, order)  # (B, B): the student's scores in the teachers' order
    tail = torch.logcumsumexp(s.flip(dims=[1]), dim=1).flip(dims=[1])  # (B, B): log sum_{n >= m} exp s_n
    return (tail - s).mean()


def js_divergence(p_logits: Tensor, q_logits: Tensor) -> Tensor:
    """Mean over rows of JS(softmax(p_i), softmax(q_i)) = (KL(p||m) + KL(q||m)) / 2, m = (p + q) / 2: scalar."""
    log_p, log_q = torch.log_softmax(p_logits, dim=-1), torch.log_softmax(q_logits, dim=-1)  # (B, B)
    log_m = torch.logaddexp(log_p, log_q) - torch.log(torch.tensor(2.0, dtype=log_p.dtype))  # (B, B)
    kl_p = (log_p.exp() * (log_p - log_m)).sum(dim=-1)  # (B,)
    kl_q = (log_q.exp() * (log_q - log_m)).sum(dim=-1)  # (B,)
    return (0.5 * (kl_p + kl_q)).mean()


class RankCSELoss(Objective):
    """InfoNCE + beta * ranking consistency + gamma * (ListNet and/or ListMLE) against the teachers."""

    num_views = 2

    def __init__(
        self,
        weights: Sequence[float],
        temperature: float = 0.05,
        teacher_temperature: float = 0.05,
        listnet_temperature: float = 0.025,
        listmle_temperature: float = 0.05,
        ranking: str = "listmle",
        listmle_weight: float = 1.0,
        listnet_weight: float = 1.0,
        consistency_weight: float = 1.0,
    ) -> None:
        super().__init__()  # values checked once, by the options class
        self.weights = list(weights)
        self.temperature, self.teacher_temperature = temperature, teacher_temperature
        self.listnet_temperature, self.listmle_temperature = listnet_temperature, listmle_temperature
        self.ranking = ranking
        self.listmle_weight, self.listnet_weight = listmle_weight, listnet_weight
        self.consistency_weight = consistency_weight

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        self.check_views(z)
        h, h_pos = z[:, 0], z[:, 1]  # (B, D) each
        sims = cosine_matrix(h, h_pos)  # (B, B): S_ij = cos(h_i, h_j')
        out = {"infonce": info_nce(h, h_pos, self.temperature)}
        loss = out["infonce"]
        if self.consistency_weight > 0:
            back = cosine_matrix(h_pos, h)  # (B, B): cos(h_i', h_j)
            out["consistency"] = js_divergence(sims / self.temperature, back / self.temperature)
            loss = loss + self.consistency_weight * out["consistency"]
        target = teacher_logits(meta, self.weights, self.teacher_temperature).detach()  # (B, B)
        if self.ranking in ("listnet", "both"):
            out["listnet"] = listnet(target, sims / self.listnet_temperature)
            loss = loss + self.listnet_weight * out["listnet"]
        if self.ranking in ("listmle", "both"):
            out["listmle"] = listmle(target, sims / self.listmle_temperature)
            loss = loss + self.listmle_weight * out["listmle"]
        return {"loss": loss, **{k: v.detach() for k, v in out.items()}}
