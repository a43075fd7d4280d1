"""The build and search settings of a faiss index (``IndexParams``): the types, their defaults, and the
parameters that apply to one type with the defaults filled in (nlist from N, sub-vectors from D)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sentcl.index import quantized

TYPES = ("flat", "ivf", "hnsw", "ivfpq", *quantized.KINDS)
REFINED = ("ivfpq", *quantized.KINDS)  # the types whose top k·refine are re-scored with the float vectors
HNSW_STORAGES = ("flat", "sq8")
SQ8_TRAIN_SIZE = 65_536
DEFAULT_NPROBE = 32  # ivf/ivfpq search setting when no recall target is set
DEFAULT_EF_SEARCH = 128  # hnsw search setting when no recall target is set
DEFAULT_TARGET_RECALL = 0.95


def default_nlist(count: int) -> int:
    """IVF cells for N vectors: round(4·√N), at most N // 39 (faiss wants >= 39 training points a cell), >= 1.

    Chosen on real MiniLM embeddings (120,000 rows, tuned to the same recall): 2·√N was slower one query at a
    time, 8·√N no faster and 2.5× the build time (docs/performance.md, "Search on real embeddings")."""
    return max(1, min(round(4 * math.sqrt(count)), count // 39))


@dataclass
class IndexParams:
    """Build and search settings; None means "derive" (nlist from N; the search setting from the recall
    target, ``sentcl.index.tuning``; without a target, nprobe 32 / efSearch 128 / refine 1)."""

    nlist: int | None = None
    nprobe: int | None = None
    hnsw_m: int = 32  # M 16 measured on real embeddings: a faster build, less recall at the tuned setting
    ef_construction: int = 80
    ef_search: int | None = None
    hnsw_storage: str = "flat"
    pq_m: int | None = None
    pq_bits: int = 8
    refine: int | None = None
    binary_index: str = "flat"
    train_size: int | None = None
    target_recall: float | None = DEFAULT_TARGET_RECALL
    tune_queries: int = 1000

    def explicit(self, kind: str) -> dict[str, int]:
        """The search settings of ``kind`` given by the caller (not tuned, only measured)."""
        keys = {"ivf": ("nprobe",), "ivfpq": ("nprobe", "refine"), "hnsw": ("ef_search",)}.get(kind, ())
        keys = ("ef_search", "refine") if kind in quantized.KINDS else keys
        return {k: getattr(self, k) for k in keys if getattr(self, k) is not None}

    def resolved(self, kind: str, dim: int, count: int) -> dict[str, Any]:
        """The parameters that apply to ``kind`` with defaults filled in (search settings before tuning)."""
        if self.target_recall is not None and not 0 < self.target_recall <= 1:
            raise ValueError(f"the recall target must lie in (0, 1], got {self.target_recall}")
        if kind in quantized.KINDS:
            return quantized.resolved(kind, count, self)
        if kind in ("ivf", "ivfpq"):
            nlist = self.nlist or default_nlist(count)
            if nlist > count:
                raise ValueError(f"nlist={nlist} exceeds the {count} vectors to index")
            out: dict[str, Any] = {
                "nlist": nlist,
                "nprobe": min(self.nprobe or DEFAULT_NPROBE, nlist),
                "train_size": min(count, self.train_size or 40 * nlist),
            }
            if kind == "ivfpq":
                pq_m = self.pq_m or _default_pq_m(dim)
                if dim % pq_m:
                    raise ValueError(f"pq_m={pq_m} must divide the dimension {dim}")
                out.update(pq_m=pq_m, pq_bits=self.pq_bits, refine=self.refine or 1)
            return out
        if kind == "hnsw":
            if self.hnsw_storage not in HNSW_STORAGES:
                raise ValueError(
                    f"unknown hnsw storage {self.hnsw_storage!r}; valid: {', '.join(HNSW_STORAGES)}"
                )
            hnsw: dict[str, Any] = {
                "hnsw_m": self.hnsw_m,
                "ef_construction": self.ef_construction,
                "ef_search": self.ef_search or DEFAULT_EF_SEARCH,
                "hnsw_storage": self.hnsw_storage,
            }
            if self.hnsw_storage == "sq8":
                hnsw["train_size"] = min(count, self.train_size or SQ8_TRAIN_SIZE)
            return hnsw
        return {}


def _default_pq_m(dim: int) -> int:
    """Sub-vectors of 8 dimensions where that divides D (48 for 384), else the largest divisor <= D/8."""
    for m in range(max(1, dim // 8), 0, -1):
        if dim % m == 0:
            return m
    return 1
