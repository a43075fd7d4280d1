"""One training step's model side: examples -> views -> flat batch -> (B, V, D) embeddings -> loss and
gradients (``forward_loss``: the plain step and GradCache's chunked one)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from sentcl import distributed
from sentcl.data.augment.features import input_embeddings
from sentcl.defaults import CONSTANT_LOSS_WINDOW
from sentcl.methods.base import Method
from sentcl.modeling.bucketing import bucketed
from sentcl.modeling.dual import DualEncoder
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.packed import packed_encode, supports
from sentcl.objectives.mlm import add_mlm
from sentcl.rng import generators_of
from sentcl.training.batch_source import per_view
from sentcl.training.gradcache import CachedEmbeddings, chunk_rows
from sentcl.training.precision import autocast

Encoder = SentenceEncoder | DualEncoder


def _augmented_embeddings(
    model: SentenceEncoder, batch: dict[str, Tensor], method: Method, num_examples: int
) -> Tensor:
    """Word embeddings of the flat batch with each view's feature augmentation applied: (B·V, L, H)."""
    assert method.embedding_augment is not None
    embeds = input_embeddings(model.backbone, batch["input_ids"])  # (B·V, L, H)
    embeds_v = per_view(embeds, num_examples, method.num_views)  # (B, V, L, H)
    parts = [
        augment(embeds_v[:, v]) if augment is not None else embeds_v[:, v]
        for v, augment in enumerate(method.embedding_augment)
    ]
    return torch.stack(parts, dim=1).flatten(0, 1)  # (B·V, L, H)


def embed_views(
    model: Encoder,
    batch: dict[str, Tensor],
    method: Method,
    num_examples: int,
    *,
    length_buckets: int = 0,
    packed_tokens: bool = False,
) -> Tensor:
    """One forward pass over all B·V rows (each row its own dropout mask): returns (B, V, D).

    With ``share_dropout_mask`` only view 0 is encoded and reused for every view, which is exactly
    "the same dropout mask for both views" without a second code path in the model. A DualEncoder
    sends each view through the encoder the method names (``Method.view_encoders``, set in its build.py). ``length_buckets`` > 0 runs each encoder on at
    most that many length-sorted micro-batches per head activation (modeling.bucketing; exact), 0 on the
    padded batch in one call. ``packed_tokens`` runs a supported (BERT) encoder on the real tokens only
    (sentcl.modeling.packed; exact), taking precedence over ``length_buckets``; others fall back to those.
    """
    num_views = method.num_views
    acts = method.head_activation
    if isinstance(model, DualEncoder):
        if method.embedding_augment or method.share_dropout_mask:
            raise ValueError("two encoders support neither feature augmentations nor a shared dropout mask")
        return _encode_by_encoder(model, batch, method, num_examples, length_buckets, packed_tokens)
    if method.share_dropout_mask:
        rows = {k: per_view(v, num_examples, num_views)[:, 0] for k, v in batch.items()}  # (B, L) each
        z = _encode_views(model, rows, num_examples, None, length_buckets, packed_tokens)  # (B, 1, D)
        return z.expand(-1, num_views, -1)  # (B, V, D)
    if method.embedding_augment:
        # augmented on the padded batch in row order (the augmentations' random draws do not depend on
        # bucketing), then bucketed like token ids
        rows = {k: v for k, v in batch.items() if k != "input_ids"}
        rows["inputs_embeds"] = _augmented_embeddings(model, batch, method, num_examples)  # (B·V, L, H)
        return _encode_views(model, rows, num_examples, acts, length_buckets, packed_tokens)
    return _encode_views(model, batch, num_examples, acts, length_buckets, packed_tokens)


def _encode_by_encoder(
    model: DualEncoder,
    batch: dict[str, Tensor],
    method: Method,
    num_examples: int,
    length_buckets: int,
    packed_tokens: bool,
) -> Tensor:
    """Each view through the encoder its method names (``Method.view_encoders``: "f" or "g" per view) -> (B, V, D)."""
    num_views, acts, encoders = method.num_views, method.head_activation, method.view_encoders
    if encoders is None or len(encoders) != num_views or set(encoders) - {"f", "g"}:
        raise ValueError(
            f"model.two_encoders needs the method to name the encoder of each of its {num_views} views "
            f"(Method.view_encoders, 'f' or 'g' per view), got {encoders!r}"
        )
    slots: list[Tensor] = [torch.empty(0)] * num_views
    for name, encoder in (("f", model.f), ("g", model.g)):
        views = [v for v, e in enumerate(encoders) if e == name]
        if not views:
            continue
        rows = {k: per_view(v, num_examples, num_views)[:, views].flatten(0, 1) for k, v in batch.items()}
        z = _encode_views(  # (B, V_e, D): this encoder's views
            encoder,
            rows,
            num_examples,
            [acts[v] for v in views] if acts else None,
            length_buckets,
            packed_tokens,
        )
        for j, v in enumerate(views):
            slots[v] = z[:, j]
    return torch.stack(slots, dim=1)  # V x (B, D) -> (B, V, D)


def _encode_views(
    encoder: SentenceEncoder,
    rows: dict[str, Tensor],
    num_examples: int,
    acts: Sequence[str] | None,
    length_buckets: int,
    packed_tokens: bool = False,
) -> Tensor:
    """Example-major rows (B·V', ...) through one encoder -> (B, V', D); ``acts`` per view or None.

    Bucketed, the views that share a head activation are encoded together (the head takes one activation
    per call), each group in length-sorted micro-batches.
    """
    num_views = rows["attention_mask"].size(0) // num_examples
    if packed_tokens and supports(encoder):
        z = packed_encode(encoder, head_activation=acts, **rows)  # (B·V', D)
        return z.view(num_examples, num_views, z.size(-1))  # (B, V', D)
    if not length_buckets:
        z = encoder(**rows, head_activation=acts)  # (B·V', D)
        return z.view(num_examples, num_views, z.size(-1))  # (B, V', D)
    groups: dict[str | None, list[int]] = {}
    for v in range(num_views):
        groups.setdefault(acts[v] if acts else None, []).append(v)
    slots: list[Tensor] = [torch.empty(0)] * num_views
    for act, views in groups.items():
        part = rows
        if len(views) < num_views:
            part = {k: per_view(v, num_examples, num_views)[:, views].flatten(0, 1) for k, v in rows.items()}
        z = bucketed(lambda r, act=act: encoder(**r, head_activation=act), part, length_buckets)  # (B·g, D)
        z = z.view(num_examples, len(views), z.size(-1))  # (B, g, D)
        if len(groups) == 1:
            return z
        for j, v in enumerate(views):
            slots[v] = z[:, j]
    return torch.stack(slots, dim=1)  # (B, V', D)


def forward_loss(
    model: Encoder,
    batch: dict[str, Tensor],
    method: Method,
    num_examples: int,
    *,
    meta: dict[str, Tensor] | None = None,
    chunk_size: int | None = None,
    precision: str = "fp32",
    device: torch.device | str = "cpu",
    scaler: torch.amp.GradScaler | None = None,
    token_seed: int = 0,
    length_buckets: int = 0,
    packed_tokens: bool = False,
) -> dict[str, Tensor]:
    """One step's forward and backward: the gradients of L accumulate in the parameters' ``.grad``.

    ``batch`` holds the B·V example-major rows (token-augmented) on ``device``. The objective runs in fp32 on
    the (B, V, D) embeddings gathered from every process, with ``meta`` as keywords; an objective's token
    loss (the MLM term, masks drawn from ``token_seed``; DiffCSE's RTD term, which also reads each row's
    sentence vector h) runs on the same rows. With ``chunk_size`` the step
    is GradCache's (``sentcl.training.gradcache``): the same loss and gradient, one chunk of examples'
    activations at a time; ``length_buckets``, ``packed_tokens``: ``embed_views``'. With ``scaler`` (fp16) the gradients are those of the scaled loss. Returns the
    objective's outputs, detached.
    """
    device = torch.device(device)
    scale = scaler.scale if scaler is not None else (lambda loss: loss)
    token_loss = method.objective.token_loss(batch, token_seed)

    def embed(rows: dict[str, Tensor], count: int) -> Tensor:
        with autocast(precision, device):
            return embed_views(
                model, rows, method, count, length_buckets=length_buckets, packed_tokens=packed_tokens
            )  # (b, V, D)

    def objective(z: Tensor) -> dict[str, Tensor]:
        return method.objective(distributed.gather_views(z.float()), **(meta or {}))  # (B_global, V, D)

    if chunk_size is None:
        z = embed(batch, num_examples)  # (B, V, D) with a graph
        outputs = objective(z)
        if token_loss is not None:
            with autocast(precision, device):
                if token_loss.conditioned:  # DiffCSE: each row's own sentence vector h, with its graph
                    term = token_loss(token_loss.rows, z.flatten(0, 1))  # h: (B·V, D), example-major rows
                else:
                    term = token_loss(token_loss.rows)
            outputs = add_mlm(outputs, term.float(), token_loss.weight, token_loss.name)
        scale(outputs["loss"]).backward()
        return {k: v.detach() for k, v in outputs.items()}
    num_views = method.num_views
    cache = CachedEmbeddings(
        embed, list(chunk_rows(batch, num_examples, num_views, chunk_size)), generators_of(method.stochastic)
    )
    z = cache.embed()  # (B, V, D), detached leaf
    outputs = objective(z)
    scale(outputs["loss"]).backward()
    shares: list[Tensor] = []
    if token_loss is not None and token_loss.conditioned:  # its gradient in h joins z.grad before the replay
        shares = _token_shares(token_loss, num_examples, num_views, chunk_size, precision, device, scale, z)
    assert z.grad is not None
    cache.backward(z.grad)
    outputs = {k: v.detach() for k, v in outputs.items()}
    if token_loss is not None and not token_loss.conditioned:
        shares = _token_shares(token_loss, num_examples, num_views, chunk_size, precision, device, scale)
    if token_loss is not None:
        outputs = add_mlm(outputs, torch.stack(shares).sum(), token_loss.weight, token_loss.name)
    return outputs


def _token_shares(
    token_loss: Any,
    num_examples: int,
    num_views: int,
    chunk_size: int,
    precision: str,
    device: torch.device,
    scale: Callable[[Tensor], Tensor],
    z: Tensor | None = None,
) -> list[Tensor]:
    """A GradCache step's token term, row-separable: each chunk's share of the counted positions, with a graph,
    backpropagated at once. A conditioned term (DiffCSE) reads the chunk's rows of the cached leaf ``z``
    (B, V, D), so its gradient in h accumulates in ``z.grad``."""
    shares, start = [], 0
    for count, rows in chunk_rows(token_loss.rows, num_examples, num_views, chunk_size):
        with autocast(precision, device):
            if z is not None:
                h = z[start : start + count].flatten(0, 1)  # (b·V, D), example-major like the rows
                share = token_loss(rows, h).float()
            else:
                share = token_loss(rows).float()
        scale(token_loss.weight * share).backward()
        shares.append(share.detach())
        start += count
    return shares


class TrainingDiverged(RuntimeError):
    """The loss, the gradients or the weights became NaN or infinite; the run stops, its checkpoints kept."""


def check_finite_loss(loss: Tensor, step: int, learning_rate: float) -> float:
    """Stop the run at a NaN or infinite loss, before the optimizer applies it (one sync per step); return it."""
    value = float(loss.detach())
    if not math.isfinite(value):
        raise TrainingDiverged(
            f"the loss is {value} at step {step} (learning rate {learning_rate:.3g}); training stopped "
            "before this step changed the weights, and the last good checkpoint is kept: lower "
            "training.learning_rate or raise training.warmup_steps"
        )
    return value


class TrainingStalled(RuntimeError):
    """The loss stayed exactly the same for ``CONSTANT_LOSS_WINDOW`` steps: the run cannot learn; it stops."""


@dataclass
class LossWatch:
    """Stops a run whose loss stays exactly constant (bit for bit) for ``window`` steps in a row. New batches
    move any loss that can learn; an exactly constant one means nothing reaches the weights (no in-batch
    negative, saturated logits, every sentence the same vector)."""

    window: int = CONSTANT_LOSS_WINDOW
    value: float | None = None
    since: int = 0  # the first step of the current run of equal values
    steps: int = 0  # steps observed (this process's run: a resume starts again)
    repeats: int = 0  # steps whose loss equalled the step before's, bit for bit

    def observe(self, value: float, step: int) -> None:
        self.steps += 1
        if value != self.value:
            self.value, self.since = value, step
            return
        self.repeats += 1
        if step - self.since + 1 >= self.window:
            raise TrainingStalled(
                f"the loss has been exactly {value!r} for {self.window} steps (steps {self.since} to {step}): "
                "the run cannot learn (too few sentences per batch for in-batch negatives, a temperature that "
                "saturates the logits, or a max_length that gives every sentence the same vector); training "
                "stopped, the last checkpoint is kept"
            )

    def verdict(self) -> str | None:
        """At the end of a run too short for the stop: a warning when the loss did not move, else None. A loss
        that learns changes at every step; one equal to the step before's at half the steps or more did not
        move (the other steps: a smaller last batch of an epoch, whose chance-level loss is another value)."""
        if self.steps < 2 or 2 * self.repeats < self.steps - 1:
            return None
        return (
            f"the loss did not move: it equalled the step before's, bit for bit, at {self.repeats} of "
            f"{self.steps} steps (last {self.value!r}), so the run did not learn (identical views, a dropout of "
            "0 with unsupervised SimCSE, too few distinct sentences, or logits that saturate); its best/ is "
            "the start model in effect"
        )


def check_finite_grad_norm(norm: Tensor, step: int, learning_rate: float) -> None:
    """Stop the run at a NaN or infinite gradient norm (without loss scaling, nothing would skip the step)."""
    value = float(norm)
    if not math.isfinite(value):
        raise TrainingDiverged(
            f"the gradient norm is {value} at step {step} (learning rate {learning_rate:.3g}); training "
            "stopped before this step changed the weights, and the last good checkpoint is kept"
        )


def check_finite_weights(module: nn.Module, step: int) -> None:
    """Refuse to save NaN or infinite weights (checked before each checkpoint and best model)."""
    bad = [name for name, p in module.named_parameters() if not bool(torch.isfinite(p).all())]
    if bad:
        raise TrainingDiverged(
            f"{len(bad)} weight tensors (first: {bad[0]}) are NaN or infinite at step {step}; not saved, the "
            "last good checkpoint is kept"
        )
