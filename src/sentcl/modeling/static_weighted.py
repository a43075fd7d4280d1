"""The weighted static form: a sentence is a weighted mean of its tokens' rows, the weights from a small
attention over them (sentcl's form, measured in docs/results/static-students-cpu.md).

    out = sum_j w_j E[t_j],   w_j = 1/T + sum_h g_h a_hj,   a_hj = mean_i softmax_j(Q_h[t_i] . K_h[t_j])

E (V, k') is the folder's table (``model.safetensors``, as in the one-table form), Q_h and K_h (V, d) each
token's query (the scale 1/sqrt(d) folded in) and key for head h, g (H,) the heads' gains. A token's query and
key depend on the token alone (its row through a layer norm and a linear map at training time), so the folder
holds them as tables: a text costs its rows and a T x T score per head, no layer. With every gain 0 the form is
the plain mean. The weights sum to 1 + sum_h g_h for every text, so an affine map of the output folds into E
(``sentcl.methods.static_components``).

The tables live beside the table in ``attention_weights.safetensors`` (``queries`` (V, H d), ``keys``
(V, H d), ``gain`` (H,); H and d in its metadata, ``heads`` and ``qk``); ``read_weighted`` checks them against
each other and the table, and names the file and the tensor on any mistake.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from sentcl.files.paths import ModelFolderError
from sentcl.modeling.static_tokens import TokenRows

WEIGHTED_FILE = "attention_weights.safetensors"
#: floats one T x T score block may hold (4 heads x 512 x 512 x 16 texts): long texts go in query chunks
SCORE_FLOATS = 1 << 24
GATHER_FLOATS = 1 << 24  # floats of gathered rows a group may hold (64 MiB)
#: texts a pass of ``StaticEncoder.encode`` pools at least: texts of one length go together, and the more
#: texts a pass holds, the fewer and larger its groups (at 128 a pass most groups would hold a text or two);
#: bench/results/static_speed_weighted.json times the default batch and one call of 10,000
POOL_TEXTS = 4096


def by_length(rows: TokenRows) -> Iterator[tuple[np.ndarray, torch.Tensor]]:
    """The texts of each length in turn (empty texts left out), as their indices (n,) and their ids (n, T):
    texts of one length need no padding."""
    starts, flat = rows.offsets, torch.from_numpy(rows.ids)
    for length in np.unique(rows.lengths[rows.lengths > 0]):
        texts = np.flatnonzero(rows.lengths == length)  # (n,)
        yield texts, flat[torch.from_numpy(starts[texts][:, None] + np.arange(length))]  # (n, T)


@dataclass(frozen=True)
class WeightedMean:
    """The form's tables: ``rows`` (V, 2 H d + k') holds each token's queries, keys and E row, ``gain`` (H,)."""

    rows: torch.Tensor
    gain: torch.Tensor
    heads: int
    qk: int

    @classmethod
    def of(cls, table: np.ndarray, queries: np.ndarray, keys: np.ndarray, gain: np.ndarray) -> WeightedMean:
        heads = len(gain)
        joined = np.concatenate([queries, keys, table], axis=1).astype(np.float32)  # (V, 2 H d + k')
        return cls(
            torch.from_numpy(np.ascontiguousarray(joined)),
            torch.from_numpy(gain.astype(np.float32)),
            heads,
            queries.shape[1] // heads,
        )

    @property
    def table(self) -> np.ndarray:
        """E (V, k')."""
        return self.rows[:, 2 * self.heads * self.qk :].numpy()

    @property
    def total_weight(self) -> float:
        """Every text's sum of weights: 1 + sum_h g_h."""
        return 1.0 + float(self.gain.sum())

    def arrays(self) -> dict[str, np.ndarray]:
        """The file's tensors: queries, keys (V, H d) and gain (H,)."""
        half = self.heads * self.qk
        rows = self.rows.numpy()
        return {
            "queries": np.ascontiguousarray(rows[:, :half]),
            "keys": np.ascontiguousarray(rows[:, half : 2 * half]),
            "gain": self.gain.numpy().copy(),
        }

    def with_table(self, table: np.ndarray) -> WeightedMean:
        """The same weights over another E (V, k')."""
        arrays = self.arrays()
        return WeightedMean.of(table, arrays["queries"], arrays["keys"], arrays["gain"])

    def _weights(self, found: torch.Tensor) -> torch.Tensor:
        """w (n, T) of texts' gathered rows (n, T, 2 H d + k'), all of one length T; query rows are taken in
        chunks that keep each score block within ``SCORE_FLOATS``."""
        n, t, _ = found.shape
        half = self.heads * self.qk
        # (n, T, H d) -> (n, H, T, d)
        q = found[..., :half].reshape(n, t, self.heads, self.qk).transpose(1, 2)
        k = found[..., half : 2 * half].reshape(n, t, self.heads, self.qk).transpose(1, 2)
        step = max(1, SCORE_FLOATS // (n * self.heads * t))
        if step >= t:  # the whole score block at once
            attention = (q @ k.transpose(-1, -2)).softmax(-1).mean(2)  # (n, H, T, T) -> (n, H, T)
        else:
            attention = torch.zeros(n, self.heads, t)  # (n, H, T): the mean over queries i of softmax_j
            for i in range(0, t, step):
                attention += (q[:, :, i : i + step] @ k.transpose(-1, -2)).softmax(-1).sum(2) / t
        return 1.0 / t + (self.gain[None, :, None] * attention).sum(1)  # (n, T)

    def __call__(self, rows: TokenRows) -> np.ndarray:
        """Each text's weighted mean (N, k'); an empty text: 0. Texts of one length at a time (no padding),
        in groups whose gathered rows stay within ``GATHER_FLOATS`` and scores within ``SCORE_FLOATS``."""
        half = self.heads * self.qk
        width = self.rows.shape[1]
        out = np.zeros((len(rows.lengths), width - 2 * half), dtype=np.float32)  # (N, k')
        for texts, ids in by_length(rows):
            t = ids.shape[1]
            group = max(1, min(SCORE_FLOATS // (self.heads * t * t), GATHER_FLOATS // (t * width)))
            for s in range(0, len(texts), group):
                found = self.rows[ids[s : s + group]]  # (n, T, 2 H d + k'): one gather
                weights = self._weights(found)  # (n, T)
                mean = weights[:, None, :] @ found[..., 2 * half :]  # (n, 1, T) @ (n, T, k') -> (n, 1, k')
                out[texts[s : s + group]] = mean.squeeze(1).numpy()
        return out


def has_weights(folder: Path) -> bool:
    return (folder / WEIGHTED_FILE).is_file()


def read_weighted(folder: Path, table: np.ndarray) -> WeightedMean:
    """The folder's weights over its table E (V, k'); a missing, unreadable or mismatched tensor is a
    ``ModelFolderError`` naming the file and the tensor."""
    from safetensors import SafetensorError, safe_open
    from safetensors.numpy import load_file

    file = folder / WEIGHTED_FILE
    try:
        found = load_file(str(file))
        with safe_open(str(file), "np") as handle:
            metadata = handle.metadata() or {}
    except (SafetensorError, OSError) as err:
        raise ModelFolderError(f"{file}: cannot be read as safetensors: {err}") from err
    missing = [k for k in ("queries", "keys", "gain") if k not in found]
    if missing:
        raise ModelFolderError(
            f"{file}: no {', '.join(map(repr, missing))} tensor (keys: {', '.join(found)})"
        )
    try:
        heads, qk = int(metadata["heads"]), int(metadata["qk"])
    except (KeyError, ValueError):
        raise ModelFolderError(
            f"{file}: its metadata must name the heads and their width as whole numbers ('heads', 'qk'), got "
            f"{metadata}"
        ) from None
    queries, keys, gain = (np.asarray(found[k], dtype=np.float32) for k in ("queries", "keys", "gain"))
    if heads <= 0 or qk <= 0:
        raise ModelFolderError(f"{file}: metadata 'heads' {heads} and 'qk' {qk} must be positive")
    if gain.shape != (heads,):
        raise ModelFolderError(
            f"{file}: 'gain' must hold one number a head ({heads},), got shape {gain.shape}"
        )
    for name, array in (("queries", queries), ("keys", keys)):
        if array.shape != (len(table), heads * qk):
            raise ModelFolderError(
                f"{file}: {name!r} has shape {array.shape}; expected ({len(table)}, {heads * qk}) for the "
                f"table's {len(table)} tokens and {heads} heads of {qk}"
            )
    for name, array in (("queries", queries), ("keys", keys), ("gain", gain)):
        if not np.isfinite(array).all():
            raise ModelFolderError(f"{file}: {name!r} holds NaN or inf")
    return WeightedMean.of(table, queries, keys, gain)


def save_weighted(folder: Path, weighted: WeightedMean) -> None:
    """Write the weights file into a folder being written (``sentcl.modeling.static.save_static``)."""
    from safetensors.numpy import save_file

    metadata = {"heads": str(weighted.heads), "qk": str(weighted.qk)}
    save_file(weighted.arrays(), str(folder / WEIGHTED_FILE), metadata=metadata)


__all__ = ["WEIGHTED_FILE", "WeightedMean", "by_length", "has_weights", "read_weighted", "save_weighted"]
