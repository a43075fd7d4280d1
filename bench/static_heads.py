"""The richer forms of a static student that ``bench.static_capacity`` fits (``make_head``), and the attention
layer written exactly as per-token tables (``AttentionTables``): the form a folder would run.

Heads (all start as the recipe's student, a mean of rows through a linear map):

- ``mlp``: a residual two-layer MLP on the mapped mean;
- ``max``: a linear map of the maximum over the rows of a second table (the concatenated power means of Rücklé,
  Eger, Peyrard & Gurevych, "Concatenated power mean word embeddings as universal cross-lingual sentence
  representations");
- ``attention``: one pre-norm self-attention layer over the rows (Vaswani et al., "Attention is all you
  need"), residual, before the mean;
- ``weights``: the rows' weights in the mean from a small attention over them (``heads`` heads of ``qk``
  dimensions), the values being the rows themselves: sentcl's weighted form (``sentcl.methods.static_weights``,
  whose ``tables`` are what its folder runs).

One layer's queries, keys and values depend on a token alone, and the mean after it is linear, so both attention
heads fold into per-token tables and a T x T score per head: no layer runs at encode time.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from torch import nn

from sentcl.methods.static_fit import MeanHead
from sentcl.methods.static_weights import WeightsHead, padded
from sentcl.modeling.static_tokens import TokenRows
from sentcl.modeling.static_weighted import by_length

ATTENTION_HEADS = 4  # the attention head's heads (its width is the table's)


def make_head(
    table: np.ndarray, out: int, kind: str, hidden: int = 1024, heads: int = 4, qk: int = 16
) -> MeanHead:
    """The student of a variant: sentcl's ``WeightsHead`` for ``weights``, else a ``Head`` of ``kind``."""
    return WeightsHead(table, out, heads, qk) if kind == "weights" else Head(table, out, kind, hidden)


class Head(MeanHead):
    """The recipe's student (the mean of rows through ``linear``, k -> k'), plus the variant's head."""

    def __init__(self, table: np.ndarray, out: int, kind: str, hidden: int) -> None:
        super().__init__(table, out)
        self.kind = kind
        if kind == "mlp":
            self.mlp = nn.Sequential(nn.Linear(out, hidden), nn.GELU(), nn.Linear(hidden, out))
            nn.init.zeros_(self.mlp[2].weight)  # the start is the recipe's student
            nn.init.zeros_(self.mlp[2].bias)
        if kind == "max":  # torch's max bags take no sparse gradient: a dense second table
            rows = torch.from_numpy(table.copy())  # (V, k)
            self.max = nn.EmbeddingBag.from_pretrained(rows, freeze=False, mode="max")
            self.max_map = nn.Linear(table.shape[1], out, bias=False)
            nn.init.zeros_(self.max_map.weight)
        if kind == "attention":  # one pre-norm self-attention layer over the rows, residual, then the mean
            width = table.shape[1]
            self.norm = nn.LayerNorm(width)
            self.qkv = nn.Linear(width, 3 * width)
            self.out = nn.Linear(width, width)
            nn.init.zeros_(self.out.weight)  # the start is the recipe's student
            nn.init.zeros_(self.out.bias)

    def attend(self, flat: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        """The mean over each text's rows after one self-attention layer (B, k)."""
        x, valid, keys, lengths = padded(self.mean.weight, flat, offsets)
        batch, longest, width = x.shape
        q, k, v = (
            self.qkv(self.norm(x))
            .view(batch, longest, 3, ATTENTION_HEADS, width // ATTENTION_HEADS)
            # (B, L, 3, H, k/H) -> 3 x (B, H, L, k/H)
            .permute(2, 0, 3, 1, 4)
        )
        context = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keys[:, None, None, :])
        context = context.transpose(1, 2).reshape(batch, longest, width)  # (B, H, L, k/H) -> (B, L, k)
        h = (x + self.out(context)) * valid[..., None]  # (B, L, k)
        return h.sum(1) / lengths.clamp(min=1)[:, None]  # (B, k)

    def forward(self, flat: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        if self.kind == "attention":
            return self.linear(self.attend(flat, offsets))  # (B, k')
        mapped = self.linear(self.mean(flat, offsets))  # (B, k')
        if self.kind == "mlp":
            return mapped + self.mlp(mapped)
        if self.kind == "max":
            return mapped + self.max_map(self.max(flat, offsets))
        return mapped


PRIME = 1_000_003  # the bigram hash: (a * PRIME + b) mod B


def with_bigrams(rows: TokenRows, vocab: int, buckets: int) -> TokenRows:
    """Each text's ids followed by its neighbouring pairs' bucket ids (``vocab`` + hash mod ``buckets``)."""
    lengths = rows.lengths
    pairs = np.maximum(lengths - 1, 0)  # (N,)
    position = np.arange(len(rows.ids)) - np.repeat(rows.offsets, lengths)  # (T,) index in its text
    has_next = position < np.repeat(lengths - 1, lengths)  # (T,)
    first = np.flatnonzero(has_next)  # (P,)
    bucket = vocab + (rows.ids[first] * PRIME + rows.ids[first + 1]) % buckets  # (P,)
    total = lengths + pairs  # (N,)
    starts = np.concatenate([[0], np.cumsum(total)[:-1]]).astype(np.int64)  # (N,)
    out = np.empty(int(total.sum()), dtype=np.int64)  # (T + P,)
    out[np.repeat(starts, lengths) + position] = rows.ids
    out[np.repeat(starts + lengths, pairs) + position[first]] = bucket
    return TokenRows(out, total)


@dataclasses.dataclass(frozen=True)
class AttentionTables:
    """The attention head, exactly, as per-token tables: one layer's queries, keys and values depend on a token
    alone (its row through the layer norm and a linear map), and the mean after the layer is linear, so

        out = mean_j E[t_j] + (sum_h sum_j a_hj V_h[t_j]) M + b,   a_hj = mean_i softmax_j(Q_h[t_i] . K_h[t_j])

    with E = X L^T (the folded mean table), Q (the scale 1/sqrt(d_h) folded in), K, V (V, k) per token,
    M = W_o^T L^T (k, k') and b = L b_o. A text costs its rows and a T x T score per head, not a layer."""

    # (V, 3k + k'): each token's query (the scale 1/sqrt(d_h) folded in), key, value and E row
    rows: torch.Tensor
    out: np.ndarray  # M (k, k')
    bias: np.ndarray  # b (k',)

    @classmethod
    def of(cls, model: Head) -> AttentionTables:
        with torch.no_grad():
            rows = model.mean.weight  # (V, k)
            width = rows.shape[1]
            qkv = model.qkv(model.norm(rows))  # (V, 3k)
            queries, keys, values = qkv[:, :width], qkv[:, width : 2 * width], qkv[:, 2 * width :]
            mapping = model.linear.weight  # (k', k)
            scaled = queries / (width // ATTENTION_HEADS) ** 0.5  # (V, k)
            return cls(
                torch.cat([scaled, keys, values, rows @ mapping.T], dim=1).contiguous(),  # (V, 3k + k')
                (model.out.weight.T @ mapping.T).numpy(),  # (k, k) @ (k, k')
                (mapping @ model.out.bias).numpy(),  # (k',)
            )

    def __call__(self, rows: TokenRows) -> np.ndarray:
        """The head's outputs (N, k') of the texts' token ids, texts of one length at a time (no padding)."""
        width, heads = self.out.shape[0], ATTENTION_HEADS
        out = np.zeros(
            (len(rows.lengths), self.out.shape[1]), dtype=np.float32
        )  # (N, k'): empty texts stay 0
        for texts, ids in by_length(rows):
            found = self.rows[ids]  # (n, T, 3k + k'): one gather
            n, t = ids.shape
            # (n, T, k) -> (n, T, H, d) each
            q, k, v = (
                found[..., i * width : (i + 1) * width].view(n, t, heads, width // heads) for i in range(3)
            )
            weights = torch.einsum("nihd,njhd->nhij", q, k).softmax(-1).mean(2)  # (n, H, T): a_hj
            context = torch.einsum("nhj,njhd->nhd", weights, v).reshape(n, width)  # (n, H, d) -> (n, k)
            mean = found[..., 3 * width :].mean(1)  # (n, k')
            out[texts] = (mean + context @ torch.from_numpy(self.out)).numpy() + self.bias
        return out
