"""Matryoshka representation learning (Kusupati et al. 2022), as used for sentence embeddings: train every
prefix of the embedding to be a good embedding on its own.

    L_matryoshka(z) = Σ_{d ∈ dims} w_d · L(normalize(z[..., :d]))

where L is any objective on (B, V, D) embeddings (InfoNCE, CoSENT, ...), ``dims`` the prefix sizes
(e.g. 768, 512, 256, 128, 64; each at most D) and w_d = 1 (Kusupati et al.'s default importance weights).
Each prefix is L2-normalised before the inner objective sees it: for cosine objectives this changes
nothing (cosine is scale-free), for dot-product objectives (``similarity: dot``, Quick-Thoughts) it makes
every term a cosine one. The wrapper is a pure function of the embeddings, so it composes with GradCache
(the cached gradient dL/dz simply sums over the prefixes) and with the MLM auxiliary loss. An inner objective
whose keyword inputs are embeddings too (a queue of negatives) names them in ``embedding_meta``: they are cut
to the same prefix.

At inference a model trained this way is used truncated: ``sentcl encode/eval --truncate-dim k``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor

from sentcl.objectives.base import Objective
from sentcl.similarity import unit_rows


def check_dims(dims: Sequence[int], dim: int | None = None, where: str = "objective.matryoshka_dims") -> None:
    """Dims are distinct positive integers, each at most the embedding size ``dim`` when it is known."""
    if not dims:
        raise ValueError(f"{where} must name at least one dimension")
    bad = [d for d in dims if not isinstance(d, int) or isinstance(d, bool) or d <= 0]
    if bad:
        raise ValueError(f"{where} must hold positive whole numbers, got {list(dims)}")
    if len(set(dims)) != len(dims):
        raise ValueError(f"{where} lists a dimension twice: {list(dims)}")
    if dim is not None and max(dims) > dim:
        raise ValueError(
            f"{where}={list(dims)}: {max(dims)} exceeds the embedding size {dim}; use dimensions <= {dim}"
        )


class Matryoshka(Objective):
    """Wraps ``inner``: its loss summed over the re-normalised prefixes z[..., :d] for d in ``dims``."""

    def __init__(
        self,
        inner: Objective,
        dims: Sequence[int],
        weights: Sequence[float] | None = None,
        normalize: bool = True,
    ) -> None:
        super().__init__()
        check_dims(dims)
        weights = [1.0] * len(dims) if weights is None else list(weights)
        if len(weights) != len(dims):
            raise ValueError(f"Matryoshka needs one weight per dimension, got {weights} for {list(dims)}")
        self.inner = inner
        self.dims = list(dims)
        self.weights = weights
        self.normalize = normalize

    @property
    def num_views(self) -> int:  # type: ignore[override]
        return self.inner.num_views

    def _prefix_meta(self, meta: dict[str, Any], d: int) -> dict[str, Any]:
        """Meta that are embeddings too (the inner objective's ``embedding_meta`` names, e.g. a queue of
        negatives (Q, D)) are cut to the same prefix (and re-normalised); other meta pass as they are."""
        names = getattr(self.inner, "embedding_meta", ())
        out = dict(meta)
        for name in names:
            if name in out and out[name] is not None:
                prefix = out[name][..., :d]  # (..., d)
                out[name] = unit_rows(prefix) if self.normalize else prefix
        return out

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        check_dims(self.dims, z.size(-1))
        total: Tensor | None = None
        outputs: dict[str, Tensor] = {}
        for d, w in zip(self.dims, self.weights, strict=True):
            prefix = z[..., :d]  # (B, V, d)
            if self.normalize:
                prefix = unit_rows(prefix)  # (B, V, d)
            out = self.inner(prefix, **self._prefix_meta(meta, d))
            total = w * out["loss"] if total is None else total + w * out["loss"]
            outputs[f"loss_dim{d}"] = out["loss"].detach()
        assert total is not None
        return {"loss": total, **outputs}


def matryoshka_wrap(objective: Objective, dims: Sequence[int] | None) -> Objective:
    """``objective`` summed over the prefixes ``dims`` (``objective.matryoshka_dims``); None: unchanged."""
    return objective if dims is None else Matryoshka(objective, dims)
