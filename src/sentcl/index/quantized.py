"""Compressed indexes re-scored with the float vectors on disk: binary (1 bit a dimension) and int8.

* ``binary``: each unit vector x becomes its sign bits, b_j = [x_j > 0], packed 8 to a byte (D/8 bytes a
  vector, 1/32 of float32). Search ranks every row by Hamming distance H(q, c) = Σ_j [b_j(q) ≠ b_j(c)]
  (faiss ``IndexBinaryFlat``, or a graph over the codes, ``IndexBinaryHNSW``), keeps the top k·r, and
  re-ranks those by the exact cosine of the float vectors read from the memory-mapped shards (``refine``
  r; ``sentcl.index.tuning`` picks the smallest r that reaches the recall target). Hamming distances are
  not cosines, so a binary search always re-scores, even at r = 1. The scheme is the one of
  sentence-transformers' ``quantize_embeddings`` with rescoring (Shakir, Aarsen and Lee, "Binary and Scalar
  Embedding Quantization for Significantly Faster & Cheaper Retrieval", Hugging Face blog, 2024), and
  faiss' binary indexes (Douze et al., "The Faiss library", 2024).
* ``int8``: 8-bit scalar quantisation, one byte a dimension (1/4 of float32), each dimension's range
  learned on a sample (faiss ``IndexScalarQuantizer`` with ``QT_8bit``, inner product), searched
  exhaustively; the top k·r are re-scored with the float vectors the same way.

Both keep only their codes in memory: the float vectors stay in the shards on disk and only the k·r
candidates of a query are read (``AnnIndex._rescore``).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy on use: `sentcl index --help` reads KINDS without it
    import numpy as np

KINDS = ("binary", "int8")
BINARY_INDEXES = ("flat", "hnsw")
INT8_TRAIN_SIZE = 65_536
BINARY_EF_SEARCH = 128  # binary hnsw's beam width when neither given nor tuned (faiss widens it to k·r)
# faiss' read flags: the codes of both flat kinds memory-mapped; the binary graph read into memory
MMAP_FLAGS = {("binary", "flat"): "IO_FLAG_MMAP", ("int8", "flat"): "IO_FLAG_MMAP"}


def code_bits(dim: int) -> int:
    """Bits of one binary code: D rounded up to a whole byte (the padding bits are 0 in every code)."""
    return 8 * ((dim + 7) // 8)


def sign_bits(x: np.ndarray) -> np.ndarray:
    """(N, D) float -> (N, ceil(D / 8)) uint8: bit j % 8 of byte j // 8 is 1 where x[:, j] > 0."""
    import numpy as np

    return np.packbits(np.asarray(x) > 0, axis=1, bitorder="little")  # (N, ceil(D/8))


def is_binary(index: Any) -> bool:
    """Whether ``index`` is a faiss binary index (written and read with the ``*_binary`` functions)."""
    return type(index).__name__.startswith("IndexBinary")


def searched_form(kind: str, unit: np.ndarray) -> np.ndarray:
    """What the faiss index of ``kind`` takes for unit rows (N, D): sign bits for binary, else the rows."""
    return sign_bits(unit) if kind == "binary" else unit


def resolved(kind: str, count: int, params: Any) -> dict[str, Any]:
    """``IndexParams`` of a compressed kind with defaults filled in (refine 1 until tuned)."""
    out: dict[str, Any] = {"refine": params.refine or 1}
    if kind == "int8":
        return {**out, "train_size": min(count, params.train_size or INT8_TRAIN_SIZE)}
    if params.binary_index not in BINARY_INDEXES:
        raise ValueError(f"unknown binary index {params.binary_index!r}; valid: {', '.join(BINARY_INDEXES)}")
    out["binary_index"] = params.binary_index
    if params.binary_index == "hnsw":
        out.update(hnsw_m=params.hnsw_m, ef_construction=params.ef_construction)
        out["ef_search"] = params.ef_search or BINARY_EF_SEARCH
    return out


def new_quantized(faiss: ModuleType, kind: str, dim: int, params: dict[str, Any]) -> Any:
    """An empty faiss index of a compressed ``kind`` (int8 still to be trained)."""
    if kind == "int8":
        qt = faiss.ScalarQuantizer.QT_8bit
        return faiss.IndexScalarQuantizer(dim, qt, faiss.METRIC_INNER_PRODUCT)
    if params["binary_index"] == "hnsw":
        index = faiss.IndexBinaryHNSW(code_bits(dim), params["hnsw_m"])
        index.hnsw.efConstruction = params["ef_construction"]
        index.hnsw.efSearch = params["ef_search"]
        return index
    return faiss.IndexBinaryFlat(code_bits(dim))


def write(faiss: ModuleType, index: Any, write_bytes: Any) -> None:
    """Serialise ``index`` through ``write_bytes`` (a file's ``write``), binary or float alike."""
    writer = faiss.PyCallbackIOWriter(write_bytes)
    (faiss.write_index_binary if is_binary(index) else faiss.write_index)(index, writer)


def read(faiss: ModuleType, path: str, kind: str, params: dict[str, Any], mmap: bool) -> Any:
    """Read a compressed index written by ``write`` (flat codes memory-mapped when ``mmap``)."""
    flag = MMAP_FLAGS.get((kind, params.get("binary_index", "flat"))) if mmap else None
    reader = faiss.read_index_binary if kind == "binary" else faiss.read_index
    return reader(path, getattr(faiss, flag) if flag else 0)


def code_dim(kind: str, dim: int) -> int:
    """The ``d`` faiss reports for an index of ``kind`` over D-dimensional vectors (bits for binary)."""
    return code_bits(dim) if kind == "binary" else dim


def memory_bytes(index: Any) -> int:
    """Bytes a faiss index's own structures hold: its codes (N · code size), plus an HNSW graph's links,
    offsets and levels, plus an IVF index's ids (8 bytes a vector) and centroids (nlist · D float32)."""
    import faiss

    # a float HNSW keeps its vectors in a storage index of its own
    codes = index if hasattr(index, "code_size") else faiss.downcast_index(index.storage)
    total = int(index.ntotal) * int(codes.code_size)
    if hasattr(index, "hnsw"):  # int32 neighbour ids, size_t offsets, int levels (sizes read, nothing copied)
        hnsw = index.hnsw
        total += 4 * int(hnsw.neighbors.size()) + 8 * int(hnsw.offsets.size()) + 4 * int(hnsw.levels.size())
    if hasattr(index, "invlists"):
        total += 8 * int(index.ntotal) + 4 * int(index.nlist) * int(index.d)
    return total
