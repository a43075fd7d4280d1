"""The label-free scores against a teacher, checked against a hand-written loop over every pair of texts."""

from __future__ import annotations

import numpy as np
import pytest

from sentcl.evaluation.teacher_agreement import nearest, teacher_agreement_scores


def by_loop(vectors: np.ndarray, k: int) -> list[list[int]]:
    """Each row's k nearest other rows by cosine, by a plain sort (ties: the lower index first)."""
    out = []
    for i, row in enumerate(vectors):
        sims = []
        for j, other in enumerate(vectors):
            if i != j:
                sims.append((-float(row @ other / np.linalg.norm(row) / np.linalg.norm(other)), j))
        out.append([j for _, j in sorted(sims)[:k]])
    return out


def test_the_scores_equal_a_hand_written_loop() -> None:
    rng = np.random.default_rng(0)
    teacher = rng.normal(size=(60, 12)).astype(np.float32)
    student = (teacher[:, :6] + 0.8 * rng.normal(size=(60, 6))).astype(np.float32)  # narrower, noisy
    ours, theirs = by_loop(student, 10), by_loop(teacher, 10)
    want_agreement = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ours, theirs, strict=True)])
    want_recall = np.mean([b[0] in a for a, b in zip(ours, theirs, strict=True)])
    got = teacher_agreement_scores(student, teacher)
    assert got["neighbour_agreement@10"] == pytest.approx(want_agreement)
    assert got["teacher_recall@10"] == pytest.approx(want_recall)
    assert 0 < got["neighbour_agreement@10"] < 1
    assert nearest(teacher, 10).tolist() == theirs
    assert teacher_agreement_scores(teacher, teacher) == {
        "neighbour_agreement@10": 1.0,
        "teacher_recall@10": 1.0,
    }


def test_too_few_texts_is_an_error() -> None:
    with pytest.raises(ValueError, match="more than 10 texts"):
        teacher_agreement_scores(np.eye(10), np.eye(10))
