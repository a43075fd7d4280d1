"""One evaluator for the paper's anisotropy evidence on STS-B: spectrum (App. F), random-pair cosine,
and cosine grouped by gold score (App. G), from a single encoding of the split's sentences."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sentcl.evaluation.senteval_readers import load_sts_task
from sentcl.evaluation.spectrum import average_cosine, group_by_gold, singular_spectrum
from sentcl.similarity import unit_rows
from sentcl.types import EncodeFn


def anisotropy(encode: EncodeFn, data_dir: Path, split: str = "test") -> dict[str, Any]:
    """{"spectrum": normalised singular values, "average_cosine", "similarity_by_gold": {group: stats}}."""
    (pairs,) = load_sts_task(data_dir, "STSBenchmark", split).values()
    sentences = list(dict.fromkeys(s for s1, s2, _ in pairs for s in (s1, s2)))
    emb = np.asarray(encode(sentences), dtype=np.float64)  # (N, D)
    row = {s: i for i, s in enumerate(sentences)}
    unit = unit_rows(emb)  # (N, D)
    first = unit[[row[s1] for s1, _, _ in pairs]]  # (P, D)
    second = unit[[row[s2] for _, s2, _ in pairs]]  # (P, D)
    cosines = np.einsum("pd,pd->p", first, second)  # (P,)
    groups = group_by_gold(cosines, np.array([g for _, _, g in pairs]))
    return {
        "split": split,
        "n_sentences": len(sentences),
        "spectrum": singular_spectrum(emb, normalize=True).tolist(),
        "average_cosine": average_cosine(emb, num_pairs=100_000, seed=0),
        "similarity_by_gold": {
            name: {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in stats.items()}
            for name, stats in groups.items()
        },
    }
