"""PCA dimension reduction of sentence vectors, stored as a sentence-transformers Dense layer.

Fit on the sentence vectors X (N, D) of a corpus: μ = mean(X), X − μ = U S Vᵀ (SVD, singular values in
decreasing order); the reduced vector of x is y = W (x − μ) with W = Vᵀ[:k] (k, D), the top ``dim`` principal
directions. The map is affine, so it is a Dense module with identity activation, W and b = −W μ; a saved folder
stays an ordinary sentence-transformers folder. Each direction's sign is fixed (its largest-magnitude
coordinate positive) so that a fit is reproducible.

Where it goes (our reading of sentence-transformers' ``dimensionality_reduction.py`` and distillation example,
which fit PCA on ``model.encode`` output and append the Dense module after the model's last module): the PCA is
fitted on the vectors *before* the model's final L2 normalisation and applied before it, so a model that
normalises (all-MiniLM-L6-v2's Normalize module) still gives unit vectors: pooler -> Dense(PCA) -> Normalize.
Fitting on the normalised vectors and appending after Normalize would leave the output unnormalised. The
examples' Dense has no bias (they project without centring); here the default centres (b = −W μ, PCA as
scikit-learn's ``transform``), and ``center=False`` gives the examples' literal form (b = 0). Cosine similarity
changes with the centring: −W μ moves every vector by the same offset.

``explained_variance_ratio``: the share of the fit vectors' total variance the kept directions hold, printed by
``sentcl postprocess pca`` and stored in the folder's fit record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.modeling.heads import DenseLayer
from sentcl.modeling.postprocess.whitening import RANK_TOL


@dataclass(frozen=True)
class PCA:
    """y = x Wᵀ + b, W (k, D) rows the principal directions, b (k,); float64."""

    components: np.ndarray  # (k, D)
    mean: np.ndarray  # (D,)
    explained_variance: np.ndarray  # (k,) variance of the fit vectors along each kept direction
    explained_variance_ratio: np.ndarray  # (k,) its share of the total variance
    center: bool = True

    @property
    def bias(self) -> np.ndarray:
        return -self.components @ self.mean if self.center else np.zeros(len(self.components))  # (k,)

    def apply(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x, np.float64) @ self.components.T + self.bias  # (N, D) @ (D, k) -> (N, k)

    def as_dense(self) -> DenseLayer:
        """The sentence-transformers Dense module (identity activation) computing the same map."""
        dim_out, dim_in = self.components.shape
        layer = DenseLayer(dim_in, dim_out, bias=True, activation="identity")
        with torch.no_grad():
            layer.linear.weight.copy_(torch.from_numpy(self.components.copy()))  # (k, D)
            layer.linear.bias.copy_(torch.from_numpy(self.bias.copy()))
        return layer


def fit_pca(
    vectors: np.ndarray, dim: int, where: str = "the fit data", center: bool = True, option: str = "--dim"
) -> PCA:
    """The top ``dim`` principal directions of ``vectors`` (N, D); an error names ``where`` on bad input, and
    ``option``, the setting that gave ``dim`` (the caller's: ``--dim``, a recipe key)."""
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"PCA needs a matrix of sentence vectors (N, D), got shape {x.shape}")
    n, d = x.shape
    if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= d:
        raise ValueError(f"{option} must be between 1 and the embedding size {d}, got {dim!r}")
    if not np.isfinite(x).all():
        raise ValueError(f"{where}: the sentence vectors hold NaN or inf; no PCA can be fitted")
    if n <= dim:
        raise ValueError(
            f"{where}: PCA to {dim} dimensions needs more than {dim} sentences, got {n}; fit on more sentences"
        )
    mean = x.mean(axis=0)  # (D,)
    _, s, vt = np.linalg.svd(x - mean, full_matrices=False)  # X − μ = U S Vᵀ; s decreasing, vt (min(N, D), D)
    components = vt[:dim]  # (k, D)
    signs = np.sign(components[np.arange(dim), np.abs(components).argmax(axis=1)])  # (k,)
    components = components * np.where(signs == 0, 1.0, signs)[:, None]  # (k, D)
    variance = s**2 / (n - 1)  # (min(N, D),) variance along each direction, divisor N − 1
    rank = int((variance > RANK_TOL * variance[0]).sum()) if variance[0] > 0 else 0  # whitening's rule
    if rank < dim:
        spread = (
            "no direction: every sentence gives the same vector"
            if rank == 0
            else f"only {rank} of {d} directions"
        )
        raise ValueError(
            f"{where}: the sentence vectors ({n} sentences) vary in {spread}, so {dim - rank} of the {dim} "
            f"directions PCA would keep are numerical noise; fit on more varied sentences"
            + (f" or set {option} to {rank} or less" if rank else "")
        )
    total = float(variance.sum())
    ratio = variance[:dim] / total if total > 0 else np.zeros(dim)
    return PCA(components, mean, variance[:dim], ratio, center)


def raw_vectors(encoder: Any, sentences: Sequence[str], batch_size: int = ENCODE_BATCH_SIZE) -> np.ndarray:
    """The vectors the post-processing sees: the model's output before its final L2 normalisation (N, D)."""
    normalize = encoder.normalize_output
    encoder.normalize_output = False
    try:
        return np.asarray(
            encoder.encode(list(sentences), batch_size=batch_size, show_progress=True), np.float64
        )
    finally:
        encoder.normalize_output = normalize
