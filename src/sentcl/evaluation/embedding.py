"""The one way an evaluation embeds sentences: ``sentcl eval``, ``sentcl.evaluate``, the report and the bench.

What the evaluators see is the model's embedding **before its output normalisation**, as SimCSE's
``evaluation.py`` feeds SentEval: it reads the backbone's pooled vector (``--pooler avg``: the mean of the last
layer over real tokens) and normalises nothing. A sentence-transformers folder whose pipeline ends in a
``Normalize`` module (all-MiniLM-L6-v2) is therefore evaluated on its pooled vector, not the unit vector.
Cosine scores (STS, pairs, retrieval, anisotropy) do not change; the transfer classifiers (SentEval's
L2-regularised logistic regression is not scale-free) and the spectrum do. Measured on all-MiniLM-L6-v2
(avg), ``transfer_fast`` TREC: 88.40 on the pooled vector (SentEval's figure in
docs/results/transfer-protocols.md), 90.20 on the normalised one. An ONNX folder's graph output is used as
it is (its normalisation, if any, is part of the graph).

Each distinct sentence is encoded once per encode function (``--tasks transfer transfer_fast`` or ``full``
embed the shared sentences once); the table holds the evaluation data's own sentences, nothing else.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from sentcl.defaults import ENCODE_BATCH_SIZE


def _normalising_parts(model: Any) -> list[Any]:
    """The model itself, or a dual encoder's two encoders: whatever carries ``normalize_output``."""
    parts = [model, getattr(model, "f", None), getattr(model, "g", None)]
    return [p for p in parts if p is not None and isinstance(getattr(p, "normalize_output", None), bool)]


@contextmanager
def before_normalisation(model: Any) -> Iterator[Any]:
    """Within the block ``model`` outputs its embedding before the output normalisation (restored after)."""
    parts = _normalising_parts(model)
    saved = [p.normalize_output for p in parts]
    for p in parts:
        p.normalize_output = False
    try:
        yield model
    finally:
        for p, value in zip(parts, saved, strict=True):
            p.normalize_output = value


class EvaluationEncoder:
    """sentences -> (N, D) float32: ``model.encode`` before normalisation, each distinct sentence once.

    ``batch_size`` and ``max_length`` are passed to ``model.encode`` (``max_length`` None: the model's own
    inference length). ``encode_s`` sums the seconds spent in the model.
    """

    def __init__(
        self, model: Any, batch_size: int = ENCODE_BATCH_SIZE, max_length: int | None = None
    ) -> None:
        self.model, self.batch_size, self.max_length = model, batch_size, max_length
        self.rows: dict[str, int] = {}
        self.table = np.zeros((0, 0), dtype=np.float32)
        self.encode_s = 0.0

    def embed(self, sentences: list[str]) -> np.ndarray:
        """The model's embeddings of ``sentences`` (no table), before normalisation: (N, D) float32."""
        options: dict[str, Any] = {"batch_size": self.batch_size}
        if self.max_length is not None:
            options["max_length"] = self.max_length
        start = time.perf_counter()
        with before_normalisation(self.model):
            out = np.asarray(self.model.encode(sentences, **options), dtype=np.float32)
        self.encode_s += time.perf_counter() - start
        if out.ndim != 2 or out.shape[0] != len(sentences):
            raise ValueError(
                f"encode returned shape {out.shape} for {len(sentences)} sentences; expected (N, D)"
            )
        return out

    def add(self, sentences: Sequence[str], embeddings: np.ndarray) -> None:
        """Put rows in the table (embeddings (M, D) of ``sentences``, distinct and new)."""
        if len(sentences) == 0:
            return
        self.table = (
            embeddings if self.table.size == 0 else np.concatenate([self.table, embeddings])
        )  # (N+M, D)
        self.rows.update({t: len(self.rows) + i for i, t in enumerate(sentences)})

    def __call__(self, sentences: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(sentences) if t not in self.rows]
        if missing:
            self.add(missing, self.embed(missing))
        if len(sentences) == 0:
            return np.zeros((0, self.table.shape[1] if self.table.ndim == 2 else 0), dtype=np.float32)
        return self.table[
            np.fromiter((self.rows[t] for t in sentences), dtype=np.int64, count=len(sentences))
        ]


def evaluation_encode_fn(
    model: Any, batch_size: int = ENCODE_BATCH_SIZE, max_length: int | None = None
) -> EvaluationEncoder:
    """The encode function every evaluation path uses (see the module docstring)."""
    return EvaluationEncoder(model, batch_size, max_length)


__all__ = ["EvaluationEncoder", "before_normalisation", "evaluation_encode_fn"]
