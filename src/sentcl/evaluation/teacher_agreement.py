"""Label-free scores of a student against its teacher on the user's own texts (no gold labels needed).

Both compare the nearest neighbours of each text among the others (cosine, the text itself left out):

- **neighbour agreement@k**: the mean over texts of |top-k by the student ∩ top-k by the teacher| / k;
- **recall@k of the teacher's neighbour**: the share of texts whose nearest neighbour by the teacher's vectors
  is among the student's top k (the teacher's vectors are the relevance judgements of a retrieval test).

A student equal to its teacher scores 1.0 on both; the scores need no shared space, so a narrower student (a
static model of 64 dimensions against a 384-dimensional teacher) is scored the same way.
"""

from __future__ import annotations

import numpy as np

from sentcl.evaluation.labelfree.measures import cosine_rows, overlap_at_k, top_k

K = 10


def nearest(vectors: np.ndarray, k: int) -> np.ndarray:
    """(N, k) indices of each row's k most cosine-similar other rows, best first (the row itself excluded;
    ``sentcl.evaluation.labelfree.measures.top_k``, ties by the lower row)."""
    if len(vectors) <= k:
        raise ValueError(f"neighbours@{k} need more than {k} texts, got {len(vectors)}")
    return top_k(cosine_rows(vectors, vectors), len(vectors), k)


def teacher_neighbour_recall(student: np.ndarray, teacher: np.ndarray, k: int = K) -> float:
    """Share of texts whose nearest neighbour by the teacher is in the student's top k."""
    return _recall(nearest(student, k), nearest(teacher, 1))


def _recall(ours: np.ndarray, theirs: np.ndarray) -> float:
    return float((ours == theirs[:, :1]).any(axis=1).mean())  # (N, k) == (N, 1): the teacher's first


def teacher_agreement_scores(student: np.ndarray, teacher: np.ndarray, k: int = K) -> dict[str, float]:
    """Both scores, named with their k: ``neighbour_agreement@10``, ``teacher_recall@10``."""
    if len(student) != len(teacher):
        raise ValueError(f"{len(student)} student rows against {len(teacher)} teacher rows")
    ours, theirs = nearest(student, k), nearest(teacher, k)
    return {
        f"neighbour_agreement@{k}": overlap_at_k(ours, theirs),
        f"teacher_recall@{k}": _recall(ours, theirs),
    }


__all__ = ["K", "nearest", "teacher_agreement_scores", "teacher_neighbour_recall"]
