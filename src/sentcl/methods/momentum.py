"""ESimCSE's momentum encoder and queue of negatives (Wu et al. 2022, section 3.2; MoCo's mechanism).

A :class:`sentcl.training.companion.Companion`: the loop asks it for the objective's extra inputs before the
loss and tells it when the optimizer has stepped.

- ``objective_inputs``: encodes view 0 of the batch (the original sentences) with the momentum copy, without
  a graph, keeps those embeddings for ``after_step``, and returns ``{"queue": (Q, D)}``, the embeddings of the
  preceding batches (empty at the first step);
- ``after_step``: theta_m <- m * theta_m + (1 - m) * theta for every parameter (m = 0.995; buffers copied),
  then enqueues this batch's momentum embeddings, newest first, keeping the ``queue_size`` most recent
  (2.5 x batch in the paper: 160 for batch 64);
- ``state_dict`` / ``load_state_dict``: the momentum weights and the queue, so that a resumed run continues
  exactly.

The copy is made from the model at the first step (theta_m = theta) and always runs in eval mode (no
dropout, as the paper). It is the whole encoder: pooler, and the MLP head even when ``model.mlp_only_train``
drops it at inference, so the queue lives in the space the loss compares. The authors' code averages only
the backbone and passes its output through the current head; here the head is averaged too.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import Tensor, nn

QUEUE_KEY = "queue"
WEIGHT_PREFIX = "momentum."


class MomentumQueue:
    """Momentum copy of the encoder + FIFO queue of its embeddings of the original sentences."""

    def __init__(self, momentum: float = 0.995, queue_size: int = 160) -> None:
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must lie in [0, 1), got {momentum}")
        if queue_size < 0:
            raise ValueError(f"queue_size must be >= 0, got {queue_size}")
        self.momentum, self.queue_size = momentum, queue_size
        self.encoder: nn.Module | None = None
        self.queue: Tensor | None = None  # (n, D), n <= queue_size, newest first
        self._pending: Tensor | None = None  # this step's momentum embeddings (B, D)
        self._loaded: dict[str, Tensor] | None = None  # weights from load_state_dict, before the copy exists

    # ------------------------------------------------------------------ the momentum copy

    def _encoder_for(self, model: nn.Module) -> nn.Module:
        if self.encoder is None:
            model = getattr(model, "module", model)  # DistributedDataParallel
            encoder = copy.deepcopy(model)
            for p in encoder.parameters():
                p.requires_grad_(False)
            if hasattr(encoder, "mlp_only_train"):
                encoder.mlp_only_train = False  # the head applies in eval mode too: the loss' space
            if self._loaded is not None:
                encoder.load_state_dict(self._loaded)
                self._loaded = None
            self.encoder = encoder.eval()
        return self.encoder

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        """theta_m <- m theta_m + (1 - m) theta (parameters); buffers are copied."""
        encoder = self._encoder_for(model)
        model = getattr(model, "module", model)
        for p_m, p in zip(encoder.parameters(), model.parameters(), strict=True):
            p_m.mul_(self.momentum).add_(p.detach().to(p_m.dtype), alpha=1.0 - self.momentum)
        for b_m, b in zip(encoder.buffers(), model.buffers(), strict=True):
            b_m.copy_(b)

    # ------------------------------------------------------------------ the Companion protocol

    @torch.no_grad()
    def objective_inputs(
        self, model: nn.Module, batch: dict[str, Tensor], num_examples: int
    ) -> dict[str, Tensor]:
        encoder = self._encoder_for(model)
        views = batch["input_ids"].size(0) // num_examples
        rows = {
            k: v.view(num_examples, views, *v.shape[1:])[:, 0]  # (B·V, L) -> (B, V, L) -> view 0: (B, L)
            for k, v in batch.items()
            if k in ("input_ids", "attention_mask", "token_type_ids")
        }
        self._pending = encoder(**rows).float()  # (B, D)
        queue = self.queue if self.queue is not None else self._pending.new_zeros((0, self._pending.size(1)))
        return {QUEUE_KEY: queue}

    def after_step(self, model: nn.Module) -> None:
        self.update(model)
        if self._pending is not None:
            self.enqueue(self._pending)
            self._pending = None

    def enqueue(self, embeddings: Tensor) -> None:
        """Newest first; the oldest rows beyond ``queue_size`` leave. embeddings (B, D)."""
        new = embeddings.detach().float()
        merged = (
            new if self.queue is None else torch.cat([new, self.queue.to(new.device)], dim=0)
        )  # (B + n, D)
        self.queue = merged[: self.queue_size]

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {}
        if self.queue is not None:
            state[QUEUE_KEY] = self.queue.detach().cpu().clone()
        weights = self.encoder.state_dict() if self.encoder is not None else (self._loaded or {})
        state.update({WEIGHT_PREFIX + k: v.detach().cpu().clone() for k, v in weights.items()})
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        queue = state.get(QUEUE_KEY)
        weights = {k[len(WEIGHT_PREFIX) :]: v for k, v in state.items() if k.startswith(WEIGHT_PREFIX)}
        self._pending = None
        if self.encoder is not None and weights:
            device = next(self.encoder.parameters()).device
            self.encoder.load_state_dict({k: v.to(device) for k, v in weights.items()})
        else:
            self._loaded = weights or None
        device = next(self.encoder.parameters()).device if self.encoder is not None else None
        self.queue = None if queue is None else (queue.to(device) if device is not None else queue.clone())
