"""One seed-mixing rule and one RNG snapshot: values by hand, restores, and the checkpoint round trip."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import torch

from sentcl.rng import RngSnapshot, preserved_rng, rng_state, set_rng_state, step_seed
from sentcl.training.checkpoint import load_state, save_state


def test_step_seed_by_hand() -> None:
    assert step_seed(42, 0) == 42 * 1_000_003  # an epoch's data order (stream 0 of 1)
    assert step_seed(42, 7) == 42_000_133
    assert step_seed(42, 7, 3, 31) == (42 * 1_000_003 + 7) * 31 + 3  # a method's 4th stochastic part
    assert step_seed(1, 2, 1, 64) == (1_000_003 + 2) * 64 + 1  # rank 1's MLM masks
    seeds = {step_seed(42, s, k, 64) for s in range(50) for k in range(64)}
    assert len(seeds) == 50 * 64, "distinct (step, stream) pairs never share a seed"


def _draws(generator: torch.Generator, rng: random.Random) -> tuple:
    return (
        random.random(),
        float(np.random.rand()),
        torch.rand(3).tolist(),
        torch.rand(2, generator=generator).tolist(),
        rng.random(),
    )


def test_snapshot_restores_every_stream() -> None:
    generator, rng = torch.Generator().manual_seed(5), random.Random(9)
    snapshot = RngSnapshot([generator, rng])
    first = _draws(generator, rng)
    snapshot.restore()
    assert _draws(generator, rng) == first


def test_preserved_rng_leaves_the_streams_where_they_were() -> None:
    torch.manual_seed(3)
    expected = torch.rand(4)
    torch.manual_seed(3)
    with preserved_rng():
        torch.rand(100)
        random.random()
    assert torch.equal(torch.rand(4), expected)


def test_rng_state_survives_a_weights_only_checkpoint(tmp_path: Path) -> None:
    random.seed(1)
    np.random.seed(2)
    torch.manual_seed(3)
    np.random.randn()  # leaves a cached gaussian in NumPy's state
    save_state({"rng": rng_state()}, tmp_path / "state.pt")
    expected = (random.random(), float(np.random.randn()), torch.rand(2).tolist())
    set_rng_state(load_state(tmp_path / "state.pt")["rng"])
    assert (random.random(), float(np.random.randn()), torch.rand(2).tolist()) == expected
