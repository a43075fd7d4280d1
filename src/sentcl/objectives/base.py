"""What every objective is: a module from view embeddings (B, V, D) to a dict of scalars with ``loss``.

An objective sees embeddings, not the model: ``forward`` gets the (B, V, D) views, and a batch's metadata (e.g.
Quick-Thoughts' sentence positions, ESimCSE's queue of momentum embeddings) arrives as keyword tensors. The
one exception is ``attach(model)``, through which an objective that trains its own module over the encoder
gets the model once before training: the MLM objective (``sentcl.objectives.mlm``) builds its masked-LM head
over the backbone and keeps the tokenizer to draw masks (``token_loss``); DiffCSE (``sentcl.methods.diffcse.loss``)
builds its discriminator the same way, and its token term is ``conditioned``: the step passes it each row's
sentence vector. No objective sees the process rank.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn


class Objective(nn.Module):
    """Base class: ``forward(z, **meta) -> {"loss": scalar, ...}`` with z shaped (batch, views, dim)."""

    #: number of views per example this objective expects
    num_views: int = 2

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:  # pragma: no cover - interface
        raise NotImplementedError

    def attach(self, model: nn.Module) -> dict[str, nn.Module]:
        """Modules this objective trains beside the encoder (e.g. the MLM head), by name; none by default."""
        return {}

    def token_loss(self, batch: dict[str, Tensor], seed: int) -> Any:
        """A loss over the step's token rows beside the embedding loss (``sentcl.objectives.mlm.TokenLoss``, or
        DiffCSE's ``RTDTerm``, which also takes the rows' sentence vectors), drawn with ``seed``; None by
        default."""
        return None

    def check_views(self, z: Tensor) -> None:
        if z.dim() != 3 or z.size(1) != self.num_views:
            raise ValueError(
                f"{type(self).__name__} expects embeddings shaped (batch, {self.num_views}, dim), got {tuple(z.shape)}"
            )


class TokenTermObjective(Objective):
    """Wraps ``inner``: its loss on the embeddings is kept, and a term over the step's token rows is added by the
    step (``token_loss``), weighted by ``weight``. ``attach`` builds the module that term trains beside the
    encoder (``build_term_module``), registered under ``term_module_name``, and keeps the tokenizer; the
    masks are drawn from ``self.generator``, seeded per step. The MLM term (``sentcl.objectives.mlm``) and
    DiffCSE's L_RTD (``sentcl.methods.diffcse.loss``) are the two."""

    term_module_name = "term"

    def __init__(self, inner: Objective, weight: float) -> None:
        super().__init__()
        self.inner, self.weight = inner, weight
        self._bound: tuple[nn.Module, Any] | None = None  # (the term's module, tokenizer)
        self.generator = torch.Generator()  # the masks' draws, seeded per step by token_loss

    @property
    def num_views(self) -> int:  # type: ignore[override]
        return self.inner.num_views

    def build_term_module(self, model: nn.Module) -> nn.Module:  # pragma: no cover - interface
        raise NotImplementedError

    def attach(self, model: nn.Module) -> dict[str, nn.Module]:
        module = self.build_term_module(model)
        self._bound = (module, model.tokenizer)
        return {**self.inner.attach(model), self.term_module_name: module}

    def bound(self) -> tuple[nn.Module, Any]:
        """(the term's module, the tokenizer); an error before ``attach``."""
        if self._bound is None:
            raise RuntimeError(f"{type(self).__name__}.attach(model) must run before training")
        return self._bound

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        return self.inner(z, **meta)
