"""GradCache (Gao et al. 2021, "Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup").

A contrastive loss couples every embedding of the batch, so it cannot be split over examples; the encoder
can. With f the encoder and z = f(x) the (B, V, D) embeddings:

    dL/dθ = Σ_chunks (dL/dz_chunk)ᵀ · (dz_chunk/dθ)

so (1) embed all chunks without a graph, (2) compute L and g = dL/dz on the detached z, (3) re-run each
chunk with a graph and backpropagate its slice of g (``z_chunk.backward(g_chunk)``). Peak memory holds one
chunk's activations instead of the whole batch's; the price is a second forward pass. Steps (1) and (3) live
here (``CachedEmbeddings``); step (2) is the loss of ``sentcl.training.step.forward_loss``, the same for a
plain step and a chunked one.

Dropout is the view-generating noise of SimCSE, so the re-run of a chunk must draw the same masks as its
first pass: the RNG state is saved before each chunk's no-grad pass and restored before its re-run. After
the step the RNG stands where the no-grad pass left it, as after a plain forward over the chunks in order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch import Tensor

from sentcl.rng import RngSnapshot

#: embed one chunk: (rows of b examples, b) -> (b, V, D)
EmbedFn = Callable[[dict[str, Tensor], int], Tensor]


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


class CachedEmbeddings:
    """Steps (1) and (3): ``embed()`` the chunks without a graph (remembering each one's RNG state), then
    ``backward(g)`` re-runs each chunk with a graph under its saved state and backpropagates its slice."""

    def __init__(
        self, embed: EmbedFn, chunks: Sequence[tuple[int, dict[str, Tensor]]], streams: Sequence[Any] = ()
    ) -> None:
        self.embed_chunk, self.chunks, self.streams = embed, list(chunks), list(streams)
        self.states: list[RngSnapshot] = []
        self.end_state: RngSnapshot | None = None

    def embed(self) -> Tensor:
        """(B, V, D) fp32 embeddings of every chunk, detached, requiring grad (the loss's leaf)."""
        parts: list[Tensor] = []
        with torch.no_grad():
            for count, rows in self.chunks:
                self.states.append(RngSnapshot(self.streams))
                parts.append(self.embed_chunk(rows, count).float())  # (b, V, D)
        self.end_state = RngSnapshot(self.streams)
        return torch.cat(parts).requires_grad_(True)  # (B, V, D)

    def backward(self, grad: Tensor) -> None:
        """Accumulate Σ_chunks (dL/dz_chunk)ᵀ · dz_chunk/dθ into the parameters' ``.grad``."""
        assert self.end_state is not None, "embed() first"
        grads = grad.split([count for count, _ in self.chunks])  # (b, V, D) each
        for (count, rows), state, g in zip(self.chunks, self.states, grads, strict=True):
            state.restore()
            self.embed_chunk(rows, count).float().backward(g)
        self.end_state.restore()
