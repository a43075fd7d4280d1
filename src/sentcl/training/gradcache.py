"""GradCache (Gao et al. 2021, "Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup").

A contrastive loss couples every embedding of the batch, so it cannot be split over examples; the encoder
can. With f the encoder and z = f(x) the (B, V, D) embeddings:

    dL/dθ = Σ_chunks (dL/dz_chunk)ᵀ · (dz_chunk/dθ)

so (1) embed all chunks without a graph, (2) compute L and g = dL/dz on the detached z, (3) re-run each
chunk with a graph and backpropagate its slice of g (``z_chunk.backward(g_chunk)``). Peak memory holds one
chunk's activations instead of the whole batch's; the price is a second forward pass.

Dropout is the view-generating noise of SimCSE, so the re-run of a chunk must draw the same masks as its
first pass: the RNG state is saved before each chunk's no-grad pass and restored before its re-run. After
the step the RNG stands where the no-grad pass left it, as after a plain forward over the chunks in order.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import Tensor

from sentcl.methods import Method
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.training.precision import autocast
from sentcl.training.step import embed_views


def chunk_rows(
    batch: dict[str, Tensor], num_examples: int, num_views: int, chunk_size: int
) -> Iterator[tuple[int, dict[str, Tensor]]]:
    """Split a flat example-major batch (B·V rows) into chunks of ``chunk_size`` examples (all V views of an
    example in the same chunk), each trimmed to its own longest row: yields (examples in chunk, rows)."""
    if chunk_size <= 0:
        raise ValueError(f"gradient cache chunk size must be positive, got {chunk_size}")
    rows = batch["attention_mask"].size(0)
    if rows != num_examples * num_views:
        raise ValueError(
            f"batch has {rows} rows but {num_examples} examples × {num_views} views = "
            f"{num_examples * num_views} were expected"
        )
    for start in range(0, num_examples, chunk_size):
        count = min(chunk_size, num_examples - start)
        part = {k: v[start * num_views : (start + count) * num_views] for k, v in batch.items()}  # (b·V, L)
        length = int(part["attention_mask"].sum(dim=1).max())  # longest real row in the chunk
        yield count, {k: v[:, :length] for k, v in part.items()}  # (b·V, L_chunk) each


class _RngState:
    """Every random stream a forward pass may draw from: the global CPU generator (dropout), the CUDA
    device's when the model runs there, and the method's own generators (e.g. feature cutoff's)."""

    def __init__(self, device: torch.device, method: Method) -> None:
        self.device = device
        self.cpu_state = torch.get_rng_state()
        self.cuda_state = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
        self.parts: list[tuple[Any, Any]] = []
        for part in getattr(method, "stochastic", ()):
            generator = getattr(part, "generator", None)
            if isinstance(generator, torch.Generator):
                self.parts.append((generator, generator.get_state()))
            rng = getattr(part, "rng", None)
            if isinstance(rng, random.Random):
                self.parts.append((rng, rng.getstate()))

    def restore(self) -> None:
        torch.set_rng_state(self.cpu_state)
        if self.cuda_state is not None:
            torch.cuda.set_rng_state(self.cuda_state, self.device)
        for stream, state in self.parts:
            if isinstance(stream, torch.Generator):
                stream.set_state(state)
            else:
                stream.setstate(state)


def gradcache_step(
    model: SentenceEncoder,
    batch: dict[str, Tensor],
    method: Method,
    num_examples: int,
    chunk_size: int,
    precision: str,
    device: torch.device | str,
    scaler: torch.amp.GradScaler | None = None,
    objective: Callable[[Tensor], dict[str, Tensor]] | None = None,
) -> dict[str, Tensor]:
    """One GradCache forward/backward: gradients of L(f(x)) accumulate into the model's ``.grad``.

    ``batch`` holds the B·V example-major rows (already token-augmented) on ``device``; chunks hold
    ``chunk_size`` examples. The objective runs in fp32 on the whole (B, V, D) batch, as the plain step
    does; ``objective`` replaces ``method.objective`` (e.g. to gather the views of every process and pass
    the batch's metadata first). With ``scaler`` (fp16 loss scaling) the cached gradient is that of the
    scaled loss. Returns the objective's outputs, detached.
    """
    device = torch.device(device)
    num_views = method.num_views
    chunks = list(chunk_rows(batch, num_examples, num_views, chunk_size))
    # ---- (1) embed every chunk without a graph, remembering the RNG state each one started from
    states: list[_RngState] = []
    parts: list[Tensor] = []
    with torch.no_grad():
        for count, rows in chunks:
            states.append(_RngState(device, method))
            with autocast(precision, device):
                parts.append(embed_views(model, rows, method, count).float())  # (b, V, D)
    end_state = _RngState(device, method)
    z = torch.cat(parts).requires_grad_(True)  # (B, V, D)
    # ---- (2) the loss and its gradient w.r.t. the detached embeddings
    outputs = (objective or method.objective)(z)
    loss = outputs["loss"]
    (scaler.scale(loss) if scaler is not None else loss).backward()
    assert z.grad is not None
    grads = z.grad.split([count for count, _ in chunks])  # (b, V, D) each
    # ---- (3) re-run each chunk with a graph under its saved RNG state and backpropagate its gradient
    for (count, rows), state, grad in zip(chunks, states, grads, strict=True):
        state.restore()
        with autocast(precision, device):
            z_chunk = embed_views(model, rows, method, count)  # (b, V, D)
        z_chunk.float().backward(grad)
    end_state.restore()
    return {k: v.detach() for k, v in outputs.items()}
