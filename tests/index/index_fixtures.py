"""Shared by the index tests: pre-drawn clustered vectors, written as shards through the real shard code."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sentcl.data.shards import encode_shards


class Fixed:
    """A stand-in encoder returning pre-drawn vectors in line order (the shard code sees a model)."""

    pooler = "avg"

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors, self.next, self.embedding_dim = vectors, 0, vectors.shape[1]

    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        out = self.vectors[self.next : self.next + len(texts)]
        self.next += len(texts)
        return out


def clustered(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((20, dim))
    return (centres[rng.integers(0, 20, n)] + 0.3 * rng.standard_normal((n, dim))).astype(np.float32)


def write_shards(folder: Path) -> tuple[Path, np.ndarray]:
    """2,000 clustered 16-d vectors as shards of 300 under ``folder/emb``; (shard folder, the vectors)."""
    vectors = clustered(2000, 16, 0)
    corpus = folder / "corpus.txt"
    corpus.write_text("".join(f"sentence {i}\n" for i in range(len(vectors))), encoding="utf-8")
    encode_shards(Fixed(vectors), corpus, folder / "emb", 300, model_name="fixed")
    return folder / "emb", vectors
