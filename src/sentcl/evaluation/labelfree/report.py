"""``sentcl eval --unlabelled FILE``: the label-free measures of a model on the user's own text, with papers.

Every measure is computed from three encodings of the distinct sentences (``sentcl.evaluation.labelfree.views``):
the plain one (the evaluation path of ``sentcl.evaluation.embedding``, before the output normalisation), a
word-deletion copy, and two passes with the model's dropout on. Each is made only when a measure asks for it,
so choosing a checkpoint by one measure (``eval.unlabelled_file``) encodes no more than that measure needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sentcl.config.unlabelled import UNLABELLED_MEASURES
from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.evaluation.alignment_uniformity import alignment, uniformity
from sentcl.evaluation.embedding import evaluation_encode_fn
from sentcl.evaluation.labelfree.compression import compression_recall
from sentcl.evaluation.labelfree.measures import neighbour_agreement, rankme, self_retrieval_at_1
from sentcl.evaluation.labelfree.views import deletion_view, dropout_passes
from sentcl.evaluation.spectrum import average_cosine

WANG_ISOLA = (
    "Wang and Isola, 2020, Understanding Contrastive Representation Learning through Alignment and "
    "Uniformity on the Hypersphere"
)
#: each measure's paper (authors, year, title); a measure of ours says so
PAPERS = {
    "alignment_dropout": WANG_ISOLA + " (views: the model's dropout, Gao, Yao and Chen, 2021, SimCSE)",
    "alignment_deletion": WANG_ISOLA + " (views: a 10% word deletion)",
    "uniformity": WANG_ISOLA,
    "rankme": "Garrido, Balestriero, Najman and LeCun, 2023, RankMe: Assessing the Downstream Performance of "
    "Pretrained Self-Supervised Representations by Their Rank",
    "anisotropy": "Ethayarajh, 2019, How Contextual are Contextualized Word Representations? (mean cosine of "
    "random pairs)",
    "self_retrieval_at_1": "ours: a sentence's word-deletion copy retrieves the sentence among all of them",
    "teacher_agreement_at_10": "ours: overlap of the top-10 neighbours of the student and the teacher",
    "recall_at_10": "recall@10 of the compressed search against the float search (index literature's recall)",
}
ANISOTROPY_PAIRS = 100_000
SELECTABLE = tuple(UNLABELLED_MEASURES)

Pair = tuple[np.ndarray, np.ndarray]


class Views:
    """The encodings a measure needs, each computed once when first asked for."""

    def __init__(
        self,
        plain: Callable[[], np.ndarray],
        deletion: Callable[[], np.ndarray],
        dropout: Callable[[], Pair | None],
    ) -> None:
        self._make = {"plain": plain, "deletion": deletion, "dropout": dropout}
        self._made: dict[str, Any] = {}

    def get(self, name: str) -> Any:
        if name not in self._made:
            self._made[name] = self._make[name]()
        return self._made[name]


def model_views(model: Any, sentences: Sequence[str], batch_size: int = ENCODE_BATCH_SIZE) -> Views:
    """The three views of ``sentences`` under ``model`` (sentcl's evaluation encoding)."""
    encode = evaluation_encode_fn(model, batch_size)
    return Views(
        lambda: encode.embed(list(sentences)),
        lambda: encode.embed(deletion_view(sentences)),
        lambda: dropout_passes(model, sentences, batch_size),
    )


def _alignment_dropout(views: Views) -> float | None:
    passes = views.get("dropout")
    return None if passes is None else alignment(*passes)


MEASURES: dict[str, Callable[[Views], float | None]] = {
    "alignment_dropout": _alignment_dropout,
    "alignment_deletion": lambda v: alignment(v.get("plain"), v.get("deletion")),
    "uniformity": lambda v: uniformity(v.get("plain")),
    "rankme": lambda v: rankme(v.get("plain")),
    "anisotropy": lambda v: average_cosine(v.get("plain"), num_pairs=ANISOTROPY_PAIRS, seed=0),
    "self_retrieval_at_1": lambda v: self_retrieval_at_1(v.get("deletion"), v.get("plain")),
}


def measure(views: Views, name: str) -> float | None:
    """One measure by name (None where it does not apply: the dropout view of a model without dropout)."""
    if name not in MEASURES:
        raise ValueError(f"unknown label-free measure {name!r}; choose from {', '.join(MEASURES)}")
    return MEASURES[name](views)


def selection_score(views: Views, name: str) -> float:
    """The measure signed so that higher is better (``UNLABELLED_MEASURES`` gives each direction)."""
    value = measure(views, name)
    if value is None:
        raise ValueError(f"eval.unlabelled_measure={name} does not apply to this model (it has no dropout)")
    return value if UNLABELLED_MEASURES[name] == "higher" else -value


def label_free(
    views: Views,
    teacher: Views | None = None,
    compressions: Sequence[str] = (),
) -> dict[str, Any]:
    """Every measure that applies: {"measures": {name: value}, "recall_at_10": {kind: recall}, ...}."""
    out: dict[str, Any] = {"measures": {name: fn(views) for name, fn in MEASURES.items()}}
    if teacher is not None:
        out["measures"]["teacher_agreement_at_10"] = neighbour_agreement(
            views.get("plain"), teacher.get("plain")
        )
    if compressions:
        out["recall_at_10"] = compression_recall(views.get("plain"), compressions)
    return out


def format_table(result: dict[str, Any]) -> str:
    """The measures, one a line: name, value, which way is better, the paper."""
    rows = [("measure", "value", "better", "paper")]
    for name, value in result["measures"].items():
        shown = "n/a (no dropout)" if value is None else f"{value:.4f}"
        better = UNLABELLED_MEASURES.get(name, "higher")
        rows.append((name, shown, better, PAPERS[name]))
    for kind, recall in result.get("recall_at_10", {}).items():
        label = f"recall_at_10[{kind if not kind.isdigit() else 'first ' + kind + ' dims'}]"
        rows.append((label, f"{recall:.4f}", "higher", PAPERS["recall_at_10"]))
    if "index_recall_at_10" in result:
        rows.append(
            ("recall_at_10[index]", f"{result['index_recall_at_10']:.4f}", "higher", "the index's search")
        )
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}" for r in rows)
