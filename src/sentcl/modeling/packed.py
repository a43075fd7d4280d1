"""Packed tokens: a BERT forward over the T real tokens of a batch, padded only inside attention.

A padded batch (N, L) spends every per-token computation (embeddings, the Q/K/V projections, the attention
output, the feed-forward block, the LayerNorms, dropout) on its padding rows too: about a third of the work
for wiki sentences at max length 32. Here those computations run once on a (T, H) tensor of the real tokens
of the whole batch, so each linear layer stays one large matmul (unlike length buckets, whose micro-batches
each pay their own weight-gradient matmuls). Only attention needs the rows apart. The rows, longest first,
are cut into attention groups by the padding rule of every ``encode`` (``batching.plan_batches``): per
group, Q, K, V are scattered into a zero (n, heads, W, d) buffer, W its longest row, by an index computed
once per step, ``scaled_dot_product_attention`` runs with the padding mask, and the context is gathered back
to the group's tokens. A batch of mixed lengths (the service's passes) so pads attention as little as a
length-sorted ``encode`` does.

It is exact: a padded key is masked out of every softmax and a padded query reaches no output, so each row's
embedding is the same function of its own tokens (the same loss and gradient up to float rounding; dropout
draws one independent mask per element, as the padded path, but not the same random numbers). It runs a
BERT backbone's own modules and weights; other architectures, poolers that read several layers or a
template, and backbone settings it does not handle fall back to the padded forward (``supports``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor, nn
from transformers import BertModel

from sentcl.config.poolers import POOLERS, pooler_info
from sentcl.modeling.batching import MAX_PADDING, plan_batches
from sentcl.modeling.encoder import SentenceEncoder

#: poolers computed on the packed last layer: mean over real tokens, or the [CLS] token
PACKED_POOLERS = frozenset(name for name in POOLERS if pooler_info(name).packed)  # the one pooler table's


def supports(encoder: nn.Module) -> bool:
    """Whether ``packed_encode`` computes exactly what ``encoder(...)`` would (else use the padded path)."""
    if not isinstance(encoder, SentenceEncoder) or encoder.prompt is not None:
        return False
    backbone = encoder.backbone
    if type(backbone) is not BertModel or encoder.pooler not in PACKED_POOLERS:
        return False
    config = backbone.config
    return (
        not config.is_decoder
        and not getattr(config, "add_cross_attention", False)
        and getattr(config, "position_embedding_type", "absolute") == "absolute"
        and not getattr(config, "chunk_size_feed_forward", 0)
        and not any(getattr(layer, "gradient_checkpointing", False) for layer in backbone.encoder.layer)
    )


class _Group(NamedTuple):
    """Rows of similar length that attend together: their tokens ``start:end`` of the packed order, each
    token's flat position row·width + column in the group's (n, width) buffer (T_g,), and the group's key mask
    (n, width)."""

    start: int
    end: int
    flat: Tensor
    key_mask: Tensor


def _layout(attention_mask: Tensor) -> tuple[Tensor, Tensor, list[_Group]]:
    """Which padded positions are tokens, and how they attend: every column before a row's last attended one
    (a cut-off token inside a row stays a query, as in the padded forward; at least column 0, the [CLS]
    position). The rows, longest first, are cut into attention groups by the padding rule every ``encode``
    uses (``batching.plan_batches``), so that attention pads each group only to its own longest row.

    Returns each token's row (T,) and column (T,), in the packed order (group by group, a row's tokens
    together and in column order), and the groups."""
    columns = torch.arange(1, attention_mask.size(1) + 1, device=attention_mask.device)  # (L,)
    lengths = (attention_mask.ne(0) * columns).amax(dim=1).clamp(min=1)  # (N,)
    order = torch.argsort(lengths, descending=True, stable=True)  # (N,)
    ranked = lengths[order].tolist()
    spans = plan_batches(ranked, len(ranked), max_cells=2**62, max_padding=MAX_PADDING)
    rows, cols, groups, start = [], [], [], 0
    for first, last in spans:
        members, width = order[first:last], ranked[first]  # (n,)
        keep = (
            torch.arange(width, device=attention_mask.device)[None, :] < lengths[members][:, None]
        )  # (n, W)
        local, col = keep.nonzero(as_tuple=True)  # (T_g,), (T_g,) in row-major order
        rows.append(members[local])
        cols.append(col)
        key_mask = attention_mask[members, :width].ne(0)  # (n, W)
        groups.append(_Group(start, start + len(col), local * width + col, key_mask))
        start += len(col)
    return torch.cat(rows), torch.cat(cols), groups  # (T,), (T,)


class _Scatter(torch.autograd.Function):
    """Rows x (T, C) into a zero (P, C) at distinct positions ``flat``; the backward is a gather (no
    ``index_add``: the positions are distinct, so nothing accumulates)."""

    @staticmethod
    def forward(ctx, x: Tensor, flat: Tensor, size: int) -> Tensor:  # type: ignore[override]
        ctx.save_for_backward(flat)
        return x.new_zeros(size, x.size(1)).index_copy_(0, flat, x)  # (P, C)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None, None]:  # type: ignore[override]
        (flat,) = ctx.saved_tensors
        return grad.index_select(0, flat), None, None  # (T, C)


class _Gather(torch.autograd.Function):
    """Rows ``flat`` (distinct) of x (P, C) -> (T, C); the backward scatters into zeros with a copy."""

    @staticmethod
    def forward(ctx, x: Tensor, flat: Tensor) -> Tensor:  # type: ignore[override]
        ctx.save_for_backward(flat)
        ctx.size = x.size(0)
        return x.index_select(0, flat)  # (T, C)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:  # type: ignore[override]
        (flat,) = ctx.saved_tensors
        return grad.new_zeros(ctx.size, grad.size(1)).index_copy_(0, flat, grad), None  # (P, C)


def _fused_qkv(attn: nn.Module) -> tuple[Tensor, Tensor]:
    """Q, K and V as one projection: the weights (3H, H) and biases (3H,) concatenated. Without autograd
    (inference, the service's passes) the concatenation is kept on the module and made again only when one of
    the six tensors changed (its storage or its version counter, which every in-place update moves); with
    autograd it is made each call, so gradients reach the three layers."""
    parts = (
        attn.query.weight,
        attn.key.weight,
        attn.value.weight,
        attn.query.bias,
        attn.key.bias,
        attn.value.bias,
    )
    if torch.is_grad_enabled():
        return torch.cat(parts[:3]), torch.cat(parts[3:])  # (3H, H), (3H,)
    stamp = tuple((p.data_ptr(), p._version) for p in parts)
    cached = attn.__dict__.get("_sentcl_fused_qkv")
    if cached is None or cached[0] != stamp:
        cached = (stamp, torch.cat(parts[:3]), torch.cat(parts[3:]))  # (3H, H), (3H,)
        attn.__dict__["_sentcl_fused_qkv"] = cached
    return cached[1], cached[2]


def _attention(layer: nn.Module, x: Tensor, groups: list[_Group]) -> Tensor:
    """BERT self-attention (before its output dense) on packed tokens, group by group: (T, H) -> (T, H)."""
    attn = layer.attention.self
    heads, d = attn.num_attention_heads, attn.attention_head_size
    weight, bias = _fused_qkv(attn)  # (3H, H), (3H,)
    qkv = nn.functional.linear(x, weight, bias)  # (T, 3H)
    out = []
    for group in groups:
        n, width = group.key_mask.shape
        padded = _Scatter.apply(qkv[group.start : group.end], group.flat, n * width)  # (n·W, 3H)
        q, k, v = padded.view(n, width, 3, heads, d).permute(2, 0, 3, 1, 4)  # 3 × (n, heads, W, d)
        context = nn.functional.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=group.key_mask[:, None, None, :],  # (n, 1, 1, W): real keys only
            dropout_p=attn.dropout.p if attn.training else 0.0,
            scale=attn.scaling,
        )  # (n, heads, W, d)
        context = context.transpose(1, 2).reshape(n * width, heads * d)  # (n·W, H)
        out.append(_Gather.apply(context, group.flat))  # (T_g, H)
    return torch.cat(out) if len(out) > 1 else out[0]  # (T, H): the groups in packed order


def packed_last_layer(
    backbone: BertModel,
    attention_mask: Tensor,
    input_ids: Tensor | None = None,
    token_type_ids: Tensor | None = None,
    inputs_embeds: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """The last layer's states of the real tokens (T, H), with each token's row (T,) and column (T,), in the
    packed order of ``_layout``."""
    rows, cols, groups = _layout(attention_mask)
    emb = backbone.embeddings
    words = emb.word_embeddings(input_ids[rows, cols]) if inputs_embeds is None else inputs_embeds[rows, cols]
    types = token_type_ids[rows, cols] if token_type_ids is not None else torch.zeros_like(cols)  # (T,)
    h = words + emb.token_type_embeddings(types) + emb.position_embeddings(cols)  # (T, H)
    h = emb.dropout(emb.LayerNorm(h))
    for layer in backbone.encoder.layer:
        out = layer.attention.output
        a = out.LayerNorm(out.dropout(out.dense(_attention(layer, h, groups))) + h)  # (T, H)
        ff = layer.output
        hidden = layer.intermediate.intermediate_act_fn(layer.intermediate.dense(a))  # (T, I)
        h = ff.LayerNorm(ff.dropout(ff.dense(hidden)) + a)  # (T, H)
    return h, rows, cols


def packed_encode(
    encoder: SentenceEncoder,
    attention_mask: Tensor,
    input_ids: Tensor | None = None,
    token_type_ids: Tensor | None = None,
    inputs_embeds: Tensor | None = None,
    head_activation: str | Sequence[str] | None = None,
) -> Tensor:
    """``encoder(...)`` for a ``supports``-ed encoder, computed on packed tokens: (N, L) rows -> (N, D)."""
    h, rows, cols = packed_last_layer(
        encoder.backbone, attention_mask, input_ids, token_type_ids, inputs_embeds
    )
    n = attention_mask.size(0)
    if encoder.pooler == "avg":
        weight = attention_mask[rows, cols].to(h.dtype)  # (T,): cut-off tokens count for nothing
        total = h.new_zeros(n, h.size(1)).index_add(0, rows, h * weight[:, None])  # (N, H)
        count = h.new_zeros(n).index_add(0, rows, weight).clamp(min=1e-9)  # (N,)
        z = total / count[:, None]  # (N, H)
    else:  # cls, cls_before_pooler: each row's column 0, the first of its tokens
        first = cols.eq(0).nonzero(as_tuple=True)[0]  # (N,): one per row, in packed order
        z = h[first[torch.argsort(rows[first])]]  # (N, H) in row order
    return encoder.finish(z, head_activation)
