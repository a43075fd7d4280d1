"""Fit a static model's token vectors to a teacher's sentence vectors (the second step of a static student).

Model2Vec's tokenlearn step (Tulkens & van Dongen), as the CPU frontier (docs/results/frontier-cpu.md) uses it: the distilled table
E (V, k) is trained so that a sentence's mean of rows, through a learned map M (k x k, or k x k' to a narrower
student: ``FitSettings.dim``), points where the teacher's
vector of that sentence points. The teacher's vectors y (D) are brought to width k by the PCA that reduced the
token vectors (``StaticTable.pca``: the same axes the table starts in), so the start is already close. After
training, M is folded into the table (E M^T): the folder is again one vector per token, and the mean commutes
with the linear map.

Losses (``FitSettings.loss``): ``cosine`` (1 - cos, mean over the batch) or ``mse`` (the mean squared error of
the vectors as they are, Reimers & Gurevych's distillation loss); ``contrastive_weight`` > 0 adds InfoNCE (van den Oord et al.; SimCSE's form) between each
student vector and every teacher vector of the batch, the teacher's own as the positive, at ``temperature``.
Adam over E and M, a constant learning rate after a linear warm-up; one fixed seed for the batch order. The
settings (``FitSettings``) are the recipe's (``sentcl.config.static_recipe``, torch-free). The student is a
module (``MeanHead``: the table and M) with its own optimizers, so a richer form trains in the same loop
(``fit_head``; the weighted form, ``sentcl.methods.static_weights``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from sentcl.config.static_recipe import LOSSES, FitSettings
from sentcl.modeling.postprocess.pca import PCA
from sentcl.objectives.infonce import info_nce
from sentcl.similarity import unit_rows

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FitResult:
    table: np.ndarray  # (V, k') float32, M folded in
    losses: list[tuple[int, float]]  # (step, mean loss since the last log)
    seconds: float  # wall time of the fit
    cpu_seconds: float  # process CPU time of the fit
    model: MeanHead  # the trained student


def bags(token_lists: Sequence[Sequence[int]], rows: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """EmbeddingBag input of the given sentences: flat ids (T,) and offsets (B,)."""
    picked = [token_lists[r] for r in rows]
    lengths = np.array([len(ids) for ids in picked], dtype=np.int64)  # (B,)
    flat = np.fromiter((i for ids in picked for i in ids), dtype=np.int64, count=int(lengths.sum()))  # (T,)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])  # (B,)
    return torch.from_numpy(flat), torch.from_numpy(offsets)


def fit_loss(student: torch.Tensor, target: torch.Tensor, settings: FitSettings) -> torch.Tensor:
    """The fit's loss of student vectors (B, k) against targets (B, k)."""
    s = unit_rows(student)  # (B, k)
    t = unit_rows(target)  # (B, k)
    if settings.loss == "cosine":
        loss = (1.0 - (s * t).sum(-1)).mean()
    else:  # Reimers & Gurevych's MSE, on the vectors as they are (the PCA'd teacher's scale)
        loss = nn.functional.mse_loss(student, target)
    if settings.contrastive_weight > 0:  # student i against every teacher vector j of the batch
        loss = loss + settings.contrastive_weight * info_nce(student, target, settings.temperature)
    return loss


class MeanHead(nn.Module):
    """The recipe's student: the mean of a sentence's rows (a sparse EmbeddingBag: only the rows a batch touches
    move, SparseAdam) through a linear map k -> k' that starts at the identity's first k' rows (Adam)."""

    def __init__(self, table: np.ndarray, out: int) -> None:
        super().__init__()
        dim = table.shape[1]
        if out > dim:
            raise ValueError(f"the student's width {out} is wider than the distilled table's {dim}")
        rows = torch.from_numpy(table.copy())  # (V, k)
        self.mean = nn.EmbeddingBag.from_pretrained(rows, freeze=False, mode="mean", sparse=True)
        self.linear = nn.Linear(dim, out, bias=False)
        with torch.no_grad():
            self.linear.weight.copy_(torch.eye(out, dim))  # (k', k): the first k' PCA axes

    def forward(self, flat: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.linear(self.mean(flat, offsets))  # (B, k')

    def optimizers(self, lr: float) -> list[torch.optim.Optimizer]:
        dense = [p for name, p in self.named_parameters() if name != "mean.weight"]
        return [torch.optim.SparseAdam([self.mean.weight], lr=lr), torch.optim.Adam(dense, lr=lr)]

    def folded(self) -> np.ndarray:
        """The map folded into every row: E = X L^T (V, k')."""
        with torch.no_grad():
            return (self.mean.weight @ self.linear.weight.T).numpy().astype(np.float32)  # (V, k) @ (k, k')


def fit_head(
    model: MeanHead, token_lists: Sequence[Sequence[int]], targets: torch.Tensor, settings: FitSettings
) -> list[tuple[int, float]]:
    """The fit loop: ``settings.steps`` batches of sentences with tokens (one fixed seed for their order),
    each optimizer after a linear warm-up; the mean loss since the last log, by step."""
    rng = np.random.default_rng(settings.seed)
    usable = np.array([i for i, ids in enumerate(token_lists) if len(ids)], dtype=np.int64)
    warmup = max(1, settings.warmup_steps)
    optimizers = [
        (o, torch.optim.lr_scheduler.LambdaLR(o, lambda s: min(1.0, (s + 1) / warmup)))
        for o in model.optimizers(settings.learning_rate)
    ]
    order, cursor, losses, running = rng.permutation(usable), 0, [], 0.0
    for step in range(1, settings.steps + 1):
        if cursor + settings.batch_size > len(order):
            order, cursor = rng.permutation(usable), 0
        rows = order[cursor : cursor + settings.batch_size]
        cursor += settings.batch_size
        loss = fit_loss(model(*bags(token_lists, rows)), targets[torch.from_numpy(rows)], settings)
        for opt, _ in optimizers:
            opt.zero_grad(set_to_none=True)
        loss.backward()
        for opt, sched in optimizers:
            opt.step()
            sched.step()
        running += float(loss.detach())
        if step % settings.log_every == 0 or step == settings.steps:
            seen = step % settings.log_every or settings.log_every
            losses.append((step, running / seen))
            logger.info("static fit: step %d/%d, loss %.4f", step, settings.steps, running / seen)
            running = 0.0
    return losses


def fit_targets(pca: PCA, teacher: np.ndarray, center: bool) -> np.ndarray:
    """The teacher's vectors (N, D) on the table's PCA axes (N, k): centred on their own mean (``center``),
    else on the token vectors' mean (the PCA's own centring)."""
    y = np.asarray(teacher, dtype=np.float64)
    if not center:
        return pca.apply(y)
    return (y - y.mean(axis=0)) @ pca.components.T  # (N, D) @ (D, k)


def fit_static(
    table: np.ndarray,
    pca: PCA,
    token_lists: Sequence[Sequence[int]],
    teacher: np.ndarray,
    settings: FitSettings,
    head: Callable[[np.ndarray, int], MeanHead] = MeanHead,
) -> FitResult:
    """Train ``table`` (V, k) so that sentence i's mean of rows matches ``pca.apply(teacher[i])``.

    ``token_lists[i]``: sentence i's token ids (no special tokens); ``teacher`` (N, D) its teacher vectors.
    Sentences without a token are left out. ``head`` makes the student from the table and its width (the
    recipe's ``MeanHead``, or a richer one: ``sentcl.methods.static_weights``); the result keeps it.
    """
    if settings.steps <= 0:
        raise ValueError("fit_static needs fit.steps > 0 (0 means: no fit)")
    if len(token_lists) != len(teacher):
        raise ValueError(f"{len(token_lists)} tokenised sentences for {len(teacher)} teacher vectors")
    usable = np.array([i for i, ids in enumerate(token_lists) if len(ids)], dtype=np.int64)
    if len(usable) < 2:
        raise ValueError("fitting a static model needs at least two sentences with tokens")
    torch.manual_seed(settings.seed)
    out = settings.dim or table.shape[1]
    targets = fit_targets(pca, teacher, settings.center)[:, :out]  # (N, k'): the first k' PCA axes
    targets = torch.from_numpy(targets.astype(np.float32))
    model = head(table, out)
    start, cpu_start = time.perf_counter(), time.process_time()
    losses = fit_head(model, token_lists, targets, settings)
    return FitResult(
        model.folded(), losses, time.perf_counter() - start, time.process_time() - cpu_start, model
    )


__all__ = [
    "LOSSES",
    "FitResult",
    "FitSettings",
    "MeanHead",
    "bags",
    "fit_head",
    "fit_loss",
    "fit_static",
    "fit_targets",
]
