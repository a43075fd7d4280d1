"""Two gloo processes on CPU must give the single-process loss and gradients on the concatenated batch."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import Tensor, nn

from sentcl import distributed
from sentcl.methods.quick_thoughts.loss import QuickThoughts
from sentcl.objectives import InfoNCE, SupervisedInfoNCE, info_nce

WORLD = 2
BATCH = 8
IN_DIM, OUT_DIM = 8, 4


def _encoder() -> nn.Linear:
    gen = torch.Generator().manual_seed(0)
    layer = nn.Linear(IN_DIM, OUT_DIM).double()
    with torch.no_grad():
        layer.weight.copy_(torch.randn(OUT_DIM, IN_DIM, generator=gen, dtype=torch.float64))
        layer.bias.copy_(torch.randn(OUT_DIM, generator=gen, dtype=torch.float64))
    return layer


def _inputs(views: int, seed: int) -> Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(BATCH, views, IN_DIM, generator=gen, dtype=torch.float64)  # (B, V, in)


def _global_loss(objective: nn.Module) -> Callable[[Tensor, Tensor], Tensor]:
    def loss(z: Tensor, local_rows: Tensor) -> Tensor:
        return objective(distributed.gather_views(z))["loss"]

    return loss


def _local_anchor_loss(z: Tensor, local_rows: Tensor) -> Tensor:
    """Rank's own anchors against the gathered positives (the other exact scheme, equal local sizes)."""
    positives = distributed.all_gather_with_grad(z[:, 1])  # (global B, D)
    return info_nce(z[:, 0], positives, 0.05, targets=local_rows)


def _quick_thoughts_loss(z: Tensor, local_rows: Tensor) -> Tensor:
    docs = torch.tensor([0, 0, 0, 0, 0, 1, 1, 1])[local_rows]  # (local B,)
    return QuickThoughts()(distributed.gather_views(z), doc_ids=distributed.all_gather(docs))["loss"]


# name -> (loss function, number of views, rows of rank 0 (rank 1 gets the rest))
SCENARIOS: dict[str, tuple[Callable[[Tensor, Tensor], Tensor], int, int]] = {
    "infonce": (_global_loss(InfoNCE(0.05)), 2, 4),
    "infonce_uneven": (_global_loss(InfoNCE(0.05)), 2, 3),
    "supervised": (_global_loss(SupervisedInfoNCE(0.05, hard_negative_weight=0.5)), 3, 4),
    "local_anchors": (_local_anchor_loss, 2, 4),
    "quick_thoughts": (_quick_thoughts_loss, 2, 4),
}


def _run_scenario(name: str, rank: int) -> dict[str, Tensor]:
    loss_fn, views, split = SCENARIOS[name]
    rows = torch.arange(0, split) if rank == 0 else torch.arange(split, BATCH)
    encoder = _encoder()
    z = encoder(_inputs(views, seed=1)[rows])  # (local B, V, out)
    loss = loss_fn(z, rows)
    loss.backward()
    distributed.sync_gradients(encoder)
    return {"loss": loss.detach(), "weight": encoder.weight.grad, "bias": encoder.bias.grad}


def _single_process(name: str) -> dict[str, Tensor]:
    """Reference: one process, the concatenated batch (the gathers are identities here)."""
    loss_fn, views, _ = SCENARIOS[name]
    if name == "local_anchors":
        loss_fn = lambda z, rows: info_nce(z[:, 0], z[:, 1], 0.05)  # noqa: E731
    encoder = _encoder()
    loss = loss_fn(encoder(_inputs(views, seed=1)), torch.arange(BATCH))
    loss.backward()
    return {"loss": loss.detach(), "weight": encoder.weight.grad, "bias": encoder.bias.grad}


def _worker(rank: int, store: str, out_dir: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"file://{store}", rank=rank, world_size=WORLD, timeout=timedelta(seconds=60)
    )
    try:
        facts = {
            "is_distributed": distributed.is_distributed(),
            "rank": distributed.rank(),
            "world_size": distributed.world_size(),
            "is_main": distributed.is_main_process(),
            "mean": distributed.all_reduce_mean(torch.tensor([float(rank), 10.0 * rank])),
        }
        distributed.barrier()
        results = {name: _run_scenario(name, rank) for name in SCENARIOS}
        torch.save({"facts": facts, "results": results}, Path(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("dist")
    # fork: the children inherit the imported modules (a spawned child re-imports torch and transformers)
    mp.start_processes(
        _worker, args=(str(tmp / "store"), str(tmp)), nprocs=WORLD, join=True, start_method="fork"
    )
    return [torch.load(tmp / f"rank{r}.pt") for r in range(WORLD)]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_two_ranks_match_single_process(ranks: list[dict[str, Any]], name: str) -> None:
    expected = _single_process(name)
    losses = torch.stack([result["results"][name]["loss"] for result in ranks])  # (world,)
    if name == "local_anchors":
        # each rank's loss covers its own anchors; their mean is the global loss
        torch.testing.assert_close(losses.mean(), expected["loss"], atol=1e-5, rtol=1e-5)
        assert not torch.allclose(losses[0], losses[1])
    else:
        for loss in losses:
            torch.testing.assert_close(loss, expected["loss"], atol=1e-5, rtol=1e-5)
    for result in ranks:
        got = result["results"][name]
        for key in ("weight", "bias"):
            torch.testing.assert_close(got[key], expected[key], atol=1e-5, rtol=1e-5)


def test_rank_helpers_inside_the_group(ranks: list[dict[str, Any]]) -> None:
    for r, result in enumerate(ranks):
        facts = result["facts"]
        assert facts["is_distributed"] is True
        assert (facts["rank"], facts["world_size"], facts["is_main"]) == (r, WORLD, r == 0)
        torch.testing.assert_close(facts["mean"], torch.tensor([0.5, 5.0]))


def test_identity_without_process_group(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not distributed.is_distributed()
    assert (distributed.rank(), distributed.world_size(), distributed.is_main_process()) == (0, 1, True)
    x = torch.randn(3, 2, 4, requires_grad=True)
    gathered = distributed.gather_views(x)
    assert gathered is x
    (gathered * 2).sum().backward()
    torch.testing.assert_close(x.grad, torch.full((3, 2, 4), 2.0))
    encoder = _encoder()
    encoder(torch.ones(1, IN_DIM, dtype=torch.float64)).sum().backward()
    before = encoder.weight.grad.clone()
    distributed.sync_gradients(encoder)
    torch.testing.assert_close(encoder.weight.grad, before)
    t = torch.tensor([1.5, 2.5])
    assert torch.equal(distributed.all_reduce_mean(t), torch.tensor([1.5, 2.5]))
    distributed.barrier()
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert distributed.init_from_env() is False


def test_init_from_env_names_missing_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    for name in ("RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(RuntimeError, match="RANK, MASTER_ADDR, MASTER_PORT not set"):
        distributed.init_from_env()
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="WORLD_SIZE='two'"):
        distributed.init_from_env()


def test_gather_views_rejects_wrong_rank() -> None:
    with pytest.raises(ValueError, match=r"\(batch, views, dim\)"):
        distributed.gather_views(torch.zeros(4, 3))
