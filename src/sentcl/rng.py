"""Random streams, once: seeds mixed from (seed, step, stream), snapshots of every stream, and their
checkpoint form.

``step_seed`` is the one seed-mixing rule (the data order of an epoch, the method's stochastic parts before a
step, the MLM masks of a step each use their own ``streams`` width, so their seeds never coincide).
``RngSnapshot`` captures every stream a forward pass or an evaluation may draw from (Python, NumPy, torch's CPU
generator, CUDA's, and optional extra generators such as a method's own) and puts them back; ``rng_state`` /
``set_rng_state`` are the process-wide streams as tensors and plain values, loadable with
``torch.load(weights_only=True)`` from a checkpoint.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import torch

SEED_PRIME = 1_000_003


def step_seed(seed: int, step: int, stream: int = 0, streams: int = 1) -> int:
    """The seed of stream ``stream`` (of ``streams``) at ``step``: (seed · 1 000 003 + step) · streams + stream."""
    return (seed * SEED_PRIME + step) * streams + stream


def rng_state() -> dict[str, Any]:
    """Every process-wide RNG stream as tensors and plain values (loadable with weights_only=True)."""
    _, keys, pos, has_gauss, cached = np.random.get_state()
    state: dict[str, Any] = {
        "python": random.getstate(),  # (int, tuple of ints, None)
        "numpy": {
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Put back what ``rng_state`` returned (also after a round trip through a checkpoint file)."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    npy = state["numpy"]
    keys = npy["keys"].numpy().astype(np.uint32)
    np.random.set_state(("MT19937", keys, npy["pos"], npy["has_gauss"], npy["cached_gaussian"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def generators_of(parts: Iterable[Any]) -> list[torch.Generator | random.Random]:
    """The ``generator`` (torch) and ``rng`` (Python) attributes of stochastic parts (e.g. a method's)."""
    found: list[torch.Generator | random.Random] = []
    for part in parts:
        generator = getattr(part, "generator", None)
        if isinstance(generator, torch.Generator):
            found.append(generator)
        rng = getattr(part, "rng", None)
        if isinstance(rng, random.Random):
            found.append(rng)
    return found


class RngSnapshot:
    """Every process-wide stream plus ``extra`` generators, captured now; ``restore()`` puts them back."""

    def __init__(self, extra: Iterable[torch.Generator | random.Random] = ()) -> None:
        self.state = rng_state()
        self.extra = [(g, g.get_state() if isinstance(g, torch.Generator) else g.getstate()) for g in extra]

    def restore(self) -> None:
        set_rng_state(self.state)
        for stream, state in self.extra:
            if isinstance(stream, torch.Generator):
                stream.set_state(state)
            else:
                stream.setstate(state)


@contextlib.contextmanager
def preserved_rng() -> Iterator[None]:
    """Run the body (e.g. an evaluation) without shifting any process-wide RNG stream."""
    snapshot = RngSnapshot()
    try:
        yield
    finally:
        snapshot.restore()
