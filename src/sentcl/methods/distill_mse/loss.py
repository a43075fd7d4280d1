"""distill_mse: the student reproduces the teacher's vectors (Reimers & Gurevych 2020, eq. 1).

For a batch of parallel sentences (s_j, t_j), with M the teacher and M^ the student:

    L = 1/|B| sum_j [ (M(s_j) - M^(s_j))^2 + (M(s_j) - M^(t_j))^2 ]

the square being the mean squared error over the vector's coordinates, as the authors' code computes it
(sentence-transformers' ``MSELoss``: ``nn.MSELoss`` on each pair of (B, D) matrices, the two terms added). A
one-sentence-a-line corpus has one view and only the first term.

``simcse_weight`` lambda > 0 adds lambda x InfoNCE(view 0, view 1) (SimCSE's eq. 1, tau 0.05; ours, not the
paper's): a sentence corpus then has two dropout views of each sentence (the MSE on the first), a pair corpus
takes the translation as the sentence's positive. The teachers' vectors arrive as
``teacher_0 .. teacher_{K-1}`` (``sentcl.objectives.teacher_targets``); the target is their weighted mean
M(s) = sum_k w_k M_k(s).

When the student's width D_s differs from the teacher's D_t, ``model.teacher_mapping`` says how they meet:

- ``projection``: a linear map W s + b of the student's vector into the teacher's space (D_s -> D_t), trained
  with the student (``attach`` hands it to the optimizer; the checkpoint keeps it, so a resumed run is exact)
  and not part of the saved model;
- ``pca``: the teacher's vectors reduced to D_s by PCA, M(s) P with P the first D_s principal axes of the
  corpus' teacher vectors (``sentcl.methods.teachers.Teachers.pca_basis``); the projection has no centring, as
  sentence-transformers' PCA Dense layer (``bias=False``), so the target keeps the vectors' mean direction (our
  reading of "reduced by PCA").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from sentcl.objectives.base import Objective
from sentcl.objectives.infonce import info_nce
from sentcl.objectives.teacher_targets import teacher_mean


class DistillMSE(Objective):
    """MSE between the student's views and the teachers' weighted-mean vector of the source sentence."""

    def __init__(
        self,
        weights: Sequence[float],
        teacher_dim: int,
        parallel: bool = False,
        mapping: str = "projection",
        pca_basis: Tensor | None = None,
        simcse_weight: float = 0.0,
        temperature: float = 0.05,
    ) -> None:
        super().__init__()  # values checked once, by the config and the options class
        if mapping == "pca" and pca_basis is None:
            raise ValueError("teacher_mapping 'pca' needs the teachers' PCA basis")
        self.parallel, self.simcse_weight, self.temperature = parallel, simcse_weight, temperature
        self.num_views = 2 if parallel or simcse_weight > 0 else 1
        self.weights, self.teacher_dim, self.mapping = list(weights), teacher_dim, mapping
        self.pca_basis = pca_basis  # (D_t, D_t), axes by explained variance
        self.projection: nn.Linear | None = None
        self.register_buffer("pca", None, persistent=False)  # (D_t, D_s) once bound

    def attach(self, model: nn.Module) -> dict[str, nn.Module]:
        """With D_s != D_t: the trained projection (returned, so the optimizer sees it), or the PCA axes."""
        return self.bind(int(getattr(model, "embedding_dim", self.teacher_dim)))

    def bind(self, student_dim: int) -> dict[str, nn.Module]:
        """Set the mapping for a student of width ``student_dim``; returns the modules to train."""
        if student_dim == self.teacher_dim:
            return {}
        if self.mapping == "projection":
            self.projection = nn.Linear(student_dim, self.teacher_dim)
            return {"teacher_projection": self.projection}
        assert self.pca_basis is not None
        if student_dim > self.teacher_dim:
            raise ValueError(
                f"model.teacher_mapping=pca reduces the teacher's {self.teacher_dim} dimensions to the "
                f"student's {student_dim}, but the student is wider; use model.teacher_mapping=projection"
            )
        self.pca = self.pca_basis[:, :student_dim].clone()  # (D_t, D_s)
        return {}

    def target(self, meta: dict[str, Any]) -> Tensor:
        """The teachers' weighted mean (B, D_t), reduced by PCA to (B, D_s) under mapping 'pca'."""
        t = teacher_mean(meta, self.weights)  # (B, D_t)
        return t @ self.pca.to(t.device) if self.pca is not None else t  # (B, D_s) or (B, D_t)

    def student(self, z: Tensor) -> Tensor:
        """The student's vectors in the target's space: (B, D)."""
        return self.projection(z) if self.projection is not None else z

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        self.check_views(z)
        t = self.target(meta)  # (B, D)
        views = range(2) if self.parallel else range(1)  # a second dropout view only serves SimCSE's term
        terms = [nn.functional.mse_loss(self.student(z[:, v]), t) for v in views]
        loss = torch.stack(terms).sum()
        out = {"mse_source": terms[0].detach()}
        if self.parallel:
            out["mse_translation"] = terms[1].detach()
        if self.simcse_weight > 0:
            simcse = info_nce(z[:, 0], z[:, 1], self.temperature)
            loss = loss + self.simcse_weight * simcse
            out["simcse"] = simcse.detach()
        return {"loss": loss, **out}
