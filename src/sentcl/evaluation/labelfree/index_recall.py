"""Recall@10 of an index built by ``sentcl index build`` for queries from the user's own text.

The unlabelled sentences, embedded by the model, are the queries; the truth is the exact cosine top 10 over
the float vectors the index was built from (its shards, ``sentcl.index.tuning.truth``; a row tied with the 10th
best counts, as in the build's tuning); the found lists are
the index's own search at its saved setting. An exact index finds the truth by construction.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sentcl.index.reader import ExactFolder, open_index
from sentcl.index.tuning import K, Probe, probe_recall, truth


def index_recall(folder: str | Path, queries: np.ndarray) -> float:
    """Recall@10 of the index at ``folder`` for ``queries`` (Q, D) against the exact search of its vectors."""
    index = open_index(folder)
    index.check_dim(queries.shape[1])
    if isinstance(index, ExactFolder):
        return 1.0
    if len(index) < K:
        raise ValueError(f"index {folder} holds {len(index)} vectors; recall@{K} needs at least {K}")
    _, found = index.search(np.asarray(queries, dtype=np.float32), K)  # (Q, K)
    known = truth(index.shards, queries, None)  # a found row as close as the exact 10th best counts (ties)
    return probe_recall(Probe(queries, None, known.pop("exact"), "", **known), found)
