"""The weighted static student's head: the rows' weights in the mean from a small attention over them.

The recipe's student (``static_fit.MeanHead``) is a mean of rows through a linear map. Here the mean's weights
come from ``heads`` attention heads of ``qk`` dimensions over the sentence's own rows (Vaswani et al.,
"Attention is all you need"; the values are the rows themselves):

    out = L sum_j w_j x_j,   w_j = 1/T + sum_h g_h a_hj,   a_hj = mean_i softmax_j(q_hi . k_hj / sqrt(d))

with q and k from each row through a layer norm and one linear map, and the gains g starting at 0 (the start
is the recipe's student). It is fitted like the recipe (``static_fit.fit_head``: the same batches, loss and
warm-up). A token's query and key depend on the token alone, so after the fit the head folds exactly into
per-token tables (``tables``: ``sentcl.modeling.static_weighted.WeightedMean``): no layer runs at encode time.
Our form, measured in docs/results/static-students-cpu.md (4 heads of 16: 95.2% of all-MiniLM-L6-v2's STS
average at 111x its speed).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from sentcl.methods.static_fit import MeanHead
from sentcl.modeling.static_weighted import WeightedMean


def padded(weight: torch.Tensor, flat: torch.Tensor, offsets: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Each text's rows of ``weight`` padded (B, L, k), which are real (B, L), which a query may attend to
    (B, L), and the texts' lengths (B,)."""
    lengths = torch.diff(offsets, append=torch.tensor([len(flat)]))  # (B,)
    batch, longest, width = len(offsets), max(int(lengths.max()), 1), weight.shape[1]
    position = torch.arange(len(flat)) - torch.repeat_interleave(offsets, lengths)  # (T,)
    owner = torch.repeat_interleave(torch.arange(batch), lengths)  # (T,)
    rows = nn.functional.embedding(flat, weight, sparse=True)  # (T, k)
    x = rows.new_zeros(batch, longest, width).index_put((owner, position), rows)  # (B, L, k)
    valid = torch.arange(longest)[None, :] < lengths[:, None]  # (B, L)
    keys = valid | (lengths == 0)[:, None]  # an empty text attends to its padding (its mean stays 0)
    return x, valid, keys, lengths


class WeightsHead(MeanHead):
    """The recipe's student with the mean's weights from ``heads`` attention heads of ``qk`` dimensions."""

    def __init__(self, table: np.ndarray, out: int, heads: int, qk: int) -> None:
        super().__init__(table, out)
        width = table.shape[1]
        self.heads, self.qk_width = heads, qk
        self.norm = nn.LayerNorm(width)
        self.qk = nn.Linear(width, 2 * heads * qk)
        self.gain = nn.Parameter(torch.zeros(heads))  # the start is the recipe's student

    def weigh(self, flat: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        """sum_j w_j x_j of each text (B, k), its rows padded."""
        x, valid, keys, lengths = padded(self.mean.weight, flat, offsets)
        batch, longest, _ = x.shape
        q, k = (
            self.qk(self.norm(x))
            .view(batch, longest, 2, self.heads, self.qk_width)
            # (B, L, 2, H, d) -> 2 x (B, H, L, d)
            .permute(2, 0, 3, 1, 4)
        )
        scores = (q @ k.transpose(-1, -2)) / self.qk_width**0.5  # (B, H, L, L)
        attention = scores.masked_fill(~keys[:, None, None, :], float("-inf")).softmax(-1)  # (B, H, L, L)
        count = lengths.clamp(min=1)[:, None]  # (B, 1)
        a = (attention * valid[:, None, :, None]).sum(2) / count[:, :, None]  # (B, H, L): the mean over i
        weights = valid / count + (self.gain[None, :, None] * a).sum(1)  # (B, L)
        return (weights[..., None] * x).sum(1)  # (B, k)

    def forward(self, flat: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.linear(self.weigh(flat, offsets))  # (B, k')

    def tables(self) -> WeightedMean:
        """The head, exactly, as per-token tables: queries (the scale folded in), keys and E = X L^T."""
        with torch.no_grad():
            found = self.qk(self.norm(self.mean.weight)).numpy()  # (V, 2 H d)
            half = self.heads * self.qk_width
            return WeightedMean.of(
                self.folded(), found[:, :half] / self.qk_width**0.5, found[:, half:], self.gain.numpy()
            )


def weights_head(heads: int, qk: int) -> Callable[[np.ndarray, int], MeanHead]:
    """``fit_static``'s ``head``: a ``WeightsHead`` of ``heads`` heads of ``qk`` dimensions."""
    return lambda table, out: WeightsHead(table, out, heads, qk)


__all__ = ["WeightsHead", "padded", "weights_head"]
