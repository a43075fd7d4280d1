"""The one module that knows process ranks: gather embeddings across ranks so in-batch negatives are global.

Scheme (exact). Every rank encodes its own rows z^(r); the training loop calls ``gather_views`` so each
rank holds the global batch Z = [z^(0); ...; z^(W-1)] (rank order) and hands Z to the objective, which
never sees ranks. ``all_gather_with_grad`` is the identity on values; its backward all-reduces (sums)
the incoming gradient and keeps this rank's rows. Parameter gradients are then AVERAGED over ranks
(``sync_gradients``, or DDP's own averaging; use one of the two, not both).

Why that is the single-process gradient. Let rank r compute a loss L_r(Z) and J_s = dz^(s)/dtheta.
Rank s's rows only reach the parameters through its own forward pass, and after the summed backward
they carry sum_r dL_r/dz^(s); so rank s's parameter gradient is sum_r dL_r/dz^(s) J_s, and the mean
over ranks is

    (1/W) sum_s sum_r dL_r/dz^(s) J_s = d/dtheta [ (1/W) sum_r L_r ].

* Recommended: every rank computes the full global loss, L_r = L(Z) (identical on all ranks, so the
  logged loss needs no reduction). The mean above is dL/dtheta exactly, for any objective (Quick-
  Thoughts, triplet terms, ...) and for uneven local batches. The O((W B)^2) similarity matrix is
  computed W times, which is negligible next to the encoder.
* Also exact: rank r's loss is the mean over its own anchors against all gathered candidates; with
  equal local batch sizes (1/W) sum_r L_r is the global mean.
* A loss term that never passes through the gather (e.g. MLM on local tokens) is averaged over ranks,
  which equals the global mean for equal local batch sizes, as with DDP.

When torch.distributed is not initialised (or the world has one process) everything is the identity.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import Tensor, nn

REQUIRED_ENV = ("RANK", "MASTER_ADDR", "MASTER_PORT")


def is_distributed() -> bool:
    """True when a process group with more than one process is initialised."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def launched_world_size() -> int:
    """The processes torchrun launched (WORLD_SIZE; 1 when unset), known before the process group is joined."""
    return max(1, _env_int("WORLD_SIZE", 1))


def local_rank() -> int:
    """This process's index on its machine (torchrun's LOCAL_RANK), 0 when unset."""
    return _env_int("LOCAL_RANK", 0)


def is_main_process() -> bool:
    return rank() == 0


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not an integer") from None


def default_device() -> torch.device:
    """The device this process should train on: cuda:LOCAL_RANK when CUDA is available, else CPU."""
    return torch.device(f"cuda:{local_rank()}") if torch.cuda.is_available() else torch.device("cpu")


def init_from_env(backend: str | None = None, timeout_s: float = 1800.0) -> bool:
    """Join the process group torchrun describes (WORLD_SIZE, RANK, MASTER_ADDR, MASTER_PORT).

    Returns False (and does nothing) when WORLD_SIZE is unset or 1. The backend defaults to nccl
    when CUDA is available, gloo otherwise.
    """
    world = _env_int("WORLD_SIZE", 1)
    if world <= 1:
        return False
    if dist.is_initialized():
        return True
    missing = [name for name in REQUIRED_ENV if name not in os.environ]
    if missing:
        raise RuntimeError(
            f"WORLD_SIZE={world} but {', '.join(missing)} not set; launch with torchrun or set them"
        )
    _env_int("RANK", 0)  # validate it is an integer
    backend = backend or ("nccl" if torch.cuda.is_available() else "gloo")
    if backend == "nccl":
        torch.cuda.set_device(local_rank())
    dist.init_process_group(backend=backend, init_method="env://", timeout=timedelta(seconds=timeout_s))
    return True


def shutdown() -> None:
    """Leave the process group (no-op when none is initialised)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def barrier() -> None:
    if is_distributed():
        dist.barrier()


def _gather_rows(x: Tensor) -> tuple[Tensor, list[int]]:
    """Concatenate every rank's x along dim 0 in rank order (local row counts may differ)."""
    count = torch.tensor([x.size(0)], device=x.device, dtype=torch.long)  # (1,)
    counts = [torch.zeros_like(count) for _ in range(world_size())]
    dist.all_gather(counts, count)
    sizes = [int(c.item()) for c in counts]
    longest = max(sizes)
    padded = x.contiguous()
    if x.size(0) < longest:
        padded = x.new_zeros((longest, *x.shape[1:]))  # (max rows, ...)
        padded[: x.size(0)] = x
    buffers = [torch.empty_like(padded) for _ in sizes]
    dist.all_gather(buffers, padded)
    gathered = torch.cat([buf[:n] for buf, n in zip(buffers, sizes, strict=True)], dim=0)  # (sum rows, ...)
    return gathered, sizes


class _AllGatherWithGrad(torch.autograd.Function):
    """Forward: all_gather along dim 0. Backward: all_reduce(sum) the gradient, keep this rank's rows."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: Tensor) -> Tensor:  # type: ignore[override]
        gathered, sizes = _gather_rows(x)
        ctx.sizes = sizes  # type: ignore[attr-defined]
        ctx.rank = rank()  # type: ignore[attr-defined]
        return gathered

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: Tensor) -> Tensor:  # type: ignore[override]
        grad = grad.contiguous().clone()
        dist.all_reduce(grad, op=dist.ReduceOp.SUM)
        start = sum(ctx.sizes[: ctx.rank])  # type: ignore[attr-defined]
        return grad[start : start + ctx.sizes[ctx.rank]]  # type: ignore[attr-defined]


def all_gather_with_grad(x: Tensor) -> Tensor:
    """Every rank's rows of x concatenated along dim 0 (rank order); gradients reach each rank's own rows."""
    if not is_distributed():
        return x
    return _AllGatherWithGrad.apply(x)


def all_gather(x: Tensor) -> Tensor:
    """Like ``all_gather_with_grad`` but without a backward: for metadata (positions, doc ids, labels)."""
    if not is_distributed():
        return x
    with torch.no_grad():
        return _gather_rows(x)[0]


def all_gather_object(obj: object) -> list[object]:
    """Every rank's (picklable) object, in rank order; ``[obj]`` when not distributed."""
    if not is_distributed():
        return [obj]
    gathered: list[object] = [None] * world_size()
    dist.all_gather_object(gathered, obj)
    return gathered


def gather_views(z: Tensor) -> Tensor:
    """(B_local, V, D) on each rank -> (B_global, V, D) on every rank, differentiable."""
    if z.dim() != 3:
        raise ValueError(f"gather_views expects (batch, views, dim), got {tuple(z.shape)}")
    return all_gather_with_grad(z)  # (sum of local B, V, D)


def all_reduce_mean(tensor: Tensor) -> Tensor:
    """In place: tensor <- mean over ranks of tensor (floating point only). Returns the tensor."""
    if not tensor.is_floating_point():
        raise ValueError(f"all_reduce_mean needs a floating-point tensor, got {tensor.dtype}")
    if is_distributed():
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        tensor.div_(world_size())
    return tensor


def sync_gradients(parameters: nn.Module | Iterable[nn.Parameter]) -> None:
    """Average parameter gradients over ranks (see the module docstring for why the mean is exact).

    A parameter whose gradient is None on some ranks counts as zero there; one with no gradient on
    any rank keeps None.
    """
    if not is_distributed():
        return
    params = parameters.parameters() if isinstance(parameters, nn.Module) else parameters
    trainable = [p for p in params if p.requires_grad]
    if not trainable:
        return
    has_grad = torch.tensor(
        [float(p.grad is not None) for p in trainable], device=trainable[0].device
    )  # (P,)
    dist.all_reduce(has_grad, op=dist.ReduceOp.SUM)
    for param, count in zip(trainable, has_grad.tolist(), strict=True):
        if count == 0:
            continue
        if param.grad is None:
            param.grad = torch.zeros_like(param)
        all_reduce_mean(param.grad)
