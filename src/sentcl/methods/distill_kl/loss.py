"""distill_kl: the student's in-batch similarity distribution follows the teachers'.

For a batch of sentences s_1..s_B with student vectors h_i and teacher similarities (``teacher_targets``):

    p_S(j | i) = softmax_{j != i}( cos(h_i, h_j) / tau ),
    p_T(j | i) = softmax_{j != i}( sum_k w_k cos(t_i^(k), t_j^(k)) / tau_T ),
    L = 1/B sum_i KL( p_T(. | i) || p_S(. | i) ) = 1/B sum_i sum_{j != i} p_T(j | i) log( p_T(j | i) / p_S(j | i) ).

Each row is a distribution over the batch's other sentences (the diagonal, a sentence against itself, is left
out on both sides). This is the in-batch relational distillation that RankCSE's ListNet term computes (the
cross-entropy -sum p_T log p_S differs from this KL by the teacher's entropy, a constant of the student),
without the contrastive term; no paper states this loss alone with these settings, so the form and the
temperatures (teacher tau_T = 0.025, student tau = 0.05: RankCSE's teacher temperature is half the student's)
are our reading. The teachers' vectors arrive as ``teacher_0 .. teacher_{K-1}``, (B, D_k) each; the student and
the teachers may have any widths (only B x B matrices are compared), so ``model.teacher_mapping`` plays no part.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from sentcl.objectives.base import Objective
from sentcl.objectives.teacher_targets import off_diagonal, teacher_logits
from sentcl.similarity import cosine_matrix


def kl_rows(teacher_logits: Tensor, student_logits: Tensor) -> Tensor:
    """Mean over rows of KL(softmax(teacher row) || softmax(student row)), the diagonal left out: scalar.

    A batch of one sentence (an epoch's last, partial batch) has no other sentence to rank: 0, with a graph."""
    if student_logits.size(0) < 2:
        return student_logits.sum() * 0.0
    eye = torch.eye(teacher_logits.size(0), dtype=torch.bool, device=teacher_logits.device)  # (B, B)
    log_p = torch.log_softmax(off_diagonal(teacher_logits), dim=-1)  # (B, B), -inf on the diagonal
    log_q = torch.log_softmax(off_diagonal(student_logits), dim=-1)  # (B, B)
    # p = 0 on the diagonal; the logs are zeroed there first so that no inf - inf enters the sum or its gradient
    terms = log_p.exp() * (log_p.masked_fill(eye, 0.0) - log_q.masked_fill(eye, 0.0))  # (B, B)
    return terms.sum(dim=-1).mean()


class DistillKL(Objective):
    """KL(p_T || p_S) between the teachers' and the student's in-batch similarity distributions."""

    num_views = 1

    def __init__(self, weights: Sequence[float], temperature: float, teacher_temperature: float) -> None:
        super().__init__()  # values checked once, by the options class
        self.weights = list(weights)
        self.temperature, self.teacher_temperature = temperature, teacher_temperature

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        self.check_views(z)
        h = z[:, 0]  # (B, D)
        student = cosine_matrix(h, h) / self.temperature  # (B, B)
        target = teacher_logits(meta, self.weights, self.teacher_temperature)  # (B, B)
        return {"loss": kl_rows(target.detach(), student)}
