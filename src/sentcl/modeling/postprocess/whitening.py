"""Whitening (Su et al. 2021, "Whitening Sentence Representations for Better Semantics and Faster Retrieval").

Fit on the sentence vectors X (N, D) of a file of sentences: μ = mean(X), Σ = cov(X) = U Λ Uᵀ (SVD of the
symmetric Σ, eigenvalues in decreasing order); apply x̃ = (x − μ) · U Λ^(-1/2), keeping the first k columns
("whitening-k", dimension reduction) when ``dim`` is given. Σ is the unbiased covariance (divisor N − 1, as
numpy's ``np.cov`` in the paper's code), so the whitened fit vectors have covariance I exactly. Directions in
which the fit vectors do not vary (eigenvalue below 1e-7 of the largest: a final LayerNorm keeps every vector in
a hyperplane) have no Λ^(-1/2): without ``dim`` they are dropped with a warning; a ``dim`` above the rank is an
error.

The map is affine, so it is stored as a sentence-transformers Dense module with identity activation:
W = (U Λ^(-1/2))[:, :k]ᵀ (k, D) and b = −μ · U Λ^(-1/2)[:, :k] (k,); a saved folder loads in
sentence-transformers unchanged.

Pitfall: the number depends on what it is fitted on (the paper's SimCSE-Table-5 row fits on NLI sentences;
fitting on the evaluation sentences themselves gives higher STS scores) and on the pooler: SimCSE's
"first-last avg." first averaged the embedding layer (hidden_states[0]) with the last layer, and later the
first transformer layer (hidden_states[1]); sentcl's ``avg_first_last`` is the latter.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch

from sentcl.modeling.heads import DenseLayer

logger = logging.getLogger("sentcl")

# an eigenvalue below this fraction of the largest is treated as zero (a direction the fit data never varies in)
RANK_TOL = 1e-7


@dataclass(frozen=True)
class Whitening:
    """x̃ = x · W + b with W (D, k), b (k,), float64."""

    weight: np.ndarray  # (D, k) = (U Λ^(-1/2))[:, :k]
    bias: np.ndarray  # (k,) = −μ W

    def apply(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x, dtype=np.float64) @ self.weight + self.bias  # (N, D) @ (D, k) -> (N, k)

    def as_dense(self) -> DenseLayer:
        """The sentence-transformers Dense module (identity activation) computing the same map."""
        dim_in, dim_out = self.weight.shape
        layer = DenseLayer(dim_in, dim_out, bias=True, activation="identity")
        with torch.no_grad():
            layer.linear.weight.copy_(torch.from_numpy(self.weight.T.copy()))  # (k, D)
            layer.linear.bias.copy_(torch.from_numpy(self.bias))
        return layer


def fit_whitening(vectors: np.ndarray, dim: int | None = None, where: str = "the fit data") -> Whitening:
    """μ, Σ = U Λ Uᵀ of ``vectors`` (N, D); ``dim`` keeps the first k columns (default: all D)."""
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"whitening needs a matrix of sentence vectors (N, D), got shape {x.shape}")
    n, d = x.shape
    k = d if dim is None else dim
    if not 1 <= k <= d:
        raise ValueError(f"--dim must be between 1 and the embedding size {d}, got {dim}")
    if not np.isfinite(x).all():
        raise ValueError(f"{where}: the sentence vectors hold NaN or inf; the model cannot be whitened")
    if n < 2:
        raise ValueError(f"{where}: whitening needs at least 2 sentences to estimate a covariance, got {n}")
    mu = x.mean(axis=0)  # (D,)
    cov = np.cov(x, rowvar=False)  # (D, D), divisor N - 1
    u, s, _ = np.linalg.svd(cov)  # Σ = U diag(s) Uᵀ, s decreasing
    rank = int((s > RANK_TOL * s[0]).sum()) if s[0] > 0 else 0
    if dim is None and 0 < rank < d:
        # Λ^(-1/2) is undefined on a zero-variance direction (e.g. a final LayerNorm keeps every vector in a
        # hyperplane); with no --dim, keep the `rank` directions that vary (our rule: the paper divides by ~0)
        logger.warning(
            "%s: the sentence vectors vary in only %d of %d directions; whitening keeps those %d (--dim %d)",
            where,
            rank,
            d,
            rank,
            rank,
        )
        k = rank
    if rank < k:
        raise ValueError(
            f"{where}: the sentence vectors span only {rank} of {d} directions ({n} sentences), so whitening "
            f"to {k} dimensions would divide by a zero variance; fit on more (and more varied) sentences "
            f"(at least {k + 1}) or pass --dim {max(rank, 1)} or less"
        )
    weight = u[:, :k] / np.sqrt(s[:k])  # (D, k) = U Λ^(-1/2), first k columns
    return Whitening(weight=weight, bias=-mu @ weight)
