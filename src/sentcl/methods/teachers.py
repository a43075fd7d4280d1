"""The teachers of a distillation method: their cached vectors of the corpus, looked up per batch.

``Teachers.build`` collects the text each example shows the teacher (``teacher_text``: the sentence of a
one-sentence-a-line corpus, the source sentence of a (source, translation) pair), encodes the distinct ones
once per teacher into the cache (``sentcl.methods.teacher_cache``), and keeps text -> row. Per step,
``Teachers.meta(examples)`` returns each teacher's vectors of the batch as the objective's keyword tensors
``teacher_0 .. teacher_{K-1}`` ((B, D_k) each, float32; ``sentcl.objectives.teacher_targets``). They are the
method's batch metadata (``Method.meta``), which the loop gathers from every process like the embeddings, so
row i of every teacher tensor belongs to row i of the gathered (B, V, D) views. A lookup needs no model and
keeps no state between steps: a resumed run looks up what the first did.

``pca_basis`` fits the principal axes of the teachers' weighted-mean vectors over the whole corpus, for
``model.teacher_mapping: pca`` (``sentcl.methods.distill_mse.loss``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from sentcl.config import ConfigError, TrainConfig
from sentcl.config.teacher import TeacherConfig
from sentcl.data.shards import ShardSet
from sentcl.methods.teacher_cache import (
    TEACHER_SHARD_SIZE,
    distinct_texts,
    teacher_cache_dir,
    teacher_vectors,
)
from sentcl.methods.teacher_engine import TeacherEngine
from sentcl.objectives.teacher_targets import teacher_key

#: rows per chunk when a pass over every teacher vector fits the PCA
PCA_CHUNK = 65_536


def teacher_text(example: Any) -> str:  # noqa: ANN401 - a corpus example
    """What the teacher encodes: the sentence, or the first field (the source) of a pair or tuple."""
    if isinstance(example, str):
        return example
    if isinstance(example, tuple) and example and isinstance(example[0], str):
        return example[0]
    raise TypeError(
        f"a teacher encodes sentences or (source, translation) pairs, got {type(example).__name__}"
    )


def teacher_device(cfg: TrainConfig) -> str | None:
    """Where a PyTorch teacher encodes: the run's device (auto: CUDA when there is one)."""
    name = cfg.training.device
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else None
    return name


@dataclass
class Teachers:
    """K teachers' cached vectors of one corpus, their normalised weights, and text -> row."""

    configs: list[TeacherConfig]
    sets: list[ShardSet]
    rows: dict[str, int]
    text_of: Callable[[Any], str] = teacher_text

    @classmethod
    def build(cls, cfg: TrainConfig, examples: Sequence[Any], *, shard_size: int | None = None) -> Teachers:
        teachers = cfg.model.teacher
        if teachers is None:
            raise ConfigError(f"{cfg.objective.name} distils a teacher: set model.teacher")
        texts, rows = distinct_texts([teacher_text(e) for e in examples])
        folder = teacher_cache_dir(cfg.model.teacher_cache)
        size = TEACHER_SHARD_SIZE if shard_size is None else shard_size
        device = teacher_device(cfg)
        engine = TeacherEngine(cfg.model.teacher_engine, cfg.model.teacher_ray_address)
        try:
            sets = [
                teacher_vectors(t, texts, folder, device=device, shard_size=size, engine=engine)
                for t in teachers
            ]
        finally:
            engine.close()  # a Ray started for the encode stops before training
        return cls(list(teachers), sets, rows)

    @property
    def weights(self) -> list[float]:
        """w_k / sum(w): the teachers' weights, summing to 1."""
        total = sum(t.weight for t in self.configs)
        return [t.weight / total for t in self.configs]

    @property
    def dims(self) -> list[int]:
        return [s.dim for s in self.sets]

    @property
    def folders(self) -> list[Path]:
        return [s.folder.parent for s in self.sets]

    def rows_of(self, examples: Sequence[Any]) -> np.ndarray:
        """The cache row of each example's teacher text: (B,) int64."""
        return np.asarray([self.rows[self.text_of(e)] for e in examples], dtype=np.int64)

    def meta(self, examples: Sequence[Any]) -> dict[str, Tensor]:
        """``teacher_k``: teacher k's vectors of the examples, (B, D_k) float32 each."""
        ids = self.rows_of(examples)  # (B,)
        return {teacher_key(k): torch.from_numpy(s.gather(ids)) for k, s in enumerate(self.sets)}

    def same_dim(self, method: str) -> int:
        """The teachers' one width; a ConfigError when they differ (a weighted mean of vectors needs one)."""
        if len(set(self.dims)) != 1:
            shown = ", ".join(f"{t.path}: {d}" for t, d in zip(self.configs, self.dims, strict=True))
            raise ConfigError(
                f"{method} averages the teachers' vectors, which needs one width; model.teacher has {shown}"
            )
        return self.dims[0]

    def mean_vectors(self, ids: np.ndarray) -> np.ndarray:
        """sum_k w_k t_k of the given rows: (n, D) float64."""
        return sum(w * s.gather(ids).astype(np.float64) for w, s in zip(self.weights, self.sets, strict=True))

    def pca_basis(self) -> np.ndarray:
        """The principal axes of the weighted-mean teacher vectors over every row, by explained variance:
        (D, D) float32, column j the j-th axis (covariance eigenvectors; each axis' sign fixed so that its
        largest coordinate is positive)."""
        n, dim = len(self.rows), self.same_dim("model.teacher_mapping=pca")
        total, outer = np.zeros(dim), np.zeros((dim, dim))
        for start in range(0, n, PCA_CHUNK):
            x = self.mean_vectors(np.arange(start, min(n, start + PCA_CHUNK)))  # (c, D)
            total += x.sum(axis=0)
            outer += x.T @ x  # (D, D)
        mean = total / n
        cov = outer / n - np.outer(mean, mean)  # (D, D)
        values, vectors = np.linalg.eigh(cov)
        basis = vectors[:, np.argsort(values)[::-1]]  # (D, D), largest variance first
        signs = np.sign(basis[np.abs(basis).argmax(axis=0), np.arange(dim)])  # (D,)
        return (basis * np.where(signs == 0, 1.0, signs)).astype(np.float32)
