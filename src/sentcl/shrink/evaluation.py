"""The user's evaluation data of a shrink run, read once before any work, and each model's score on it.

One of: ``--pairs FILE`` (STS pairs: Spearman x 100 of the cosine, ``sentcl.evaluation.pairs``),
``--retrieval DIR`` (a BEIR folder: nDCG@10, ``sentcl.evaluation.retrieval_eval``), ``--texts FILE`` (one text
a line, no labels: neighbour agreement@10 with the teacher and recall@10 of the teacher's nearest neighbour,
``sentcl.evaluation.teacher_agreement``; the teacher's vectors come from the teacher cache), or sentcl's own
evaluation tasks (``--tasks``, default ``stsb_dev``). A mistake in a file is found here, before the teacher
is opened or anything is built. Each model's headline score is divided by the teacher's: the share it keeps.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.evaluation.teacher_agreement import K, teacher_agreement_scores
from sentcl.files.fingerprint import file_sha256, json_digest, lines_sha256, tree_fingerprint

#: a texts file's first distinct texts that the label-free scores use (their cost grows with the square)
MAX_TEXTS = 5000


@dataclass
class EvalData:
    """``kind`` pairs / retrieval / texts / tasks; ``data`` the read file (PairsFile, BeirFolder, texts, task
    names); ``headline`` the score's name; ``digest`` what a changed file changes."""

    kind: str
    label: str
    data: Any
    headline: str
    digest: str

    def sentences(self, limit: int) -> list[str]:
        """Distinct sentences of the data, at most ``limit``: what the timing and the layer choice encode."""
        if self.kind == "pairs":
            found = [s for a, b, *_ in self.data.pairs for s in (a, b)]
        elif self.kind == "retrieval":
            found = [*self.data.queries.values(), *self.data.corpus.values()]
        elif self.kind == "texts":
            found = list(self.data)
        else:
            found = []
        return list(dict.fromkeys(found))[:limit]


def read_eval_data(
    pairs: Path | None, retrieval: Path | None, texts: Path | None, tasks: list[str], split: str = "test"
) -> EvalData:
    """The one evaluation source given (module docstring); a bad file is one error naming it."""
    given = [name for name, v in (("--pairs", pairs), ("--retrieval", retrieval), ("--texts", texts)) if v]
    if len(given) > 1:
        raise ValueError(f"{' and '.join(given)}: give one evaluation source")
    if pairs is not None:
        from sentcl.data.scored_pairs import read_pairs

        return EvalData("pairs", str(pairs), read_pairs(pairs), "spearman", file_sha256(pairs))
    if retrieval is not None:
        from sentcl.evaluation.retrieval_eval import read_beir

        found = read_beir(retrieval, split)
        return EvalData("retrieval", str(retrieval), found, "ndcg@10", tree_fingerprint(Path(retrieval)))
    if texts is not None:
        from sentcl.data.readers import read_sentences

        lines = list(dict.fromkeys(read_sentences(texts, "--texts file", require_one=True).texts))[:MAX_TEXTS]
        if len(lines) <= K:
            raise ValueError(
                f"--texts {texts}: {len(lines)} distinct texts; neighbours@{K} need more than {K}"
            )
        return EvalData("texts", str(texts), lines, f"neighbour_agreement@{K}", lines_sha256(lines))
    from sentcl.evaluation.runner import TASKS, expand

    names = expand(tasks)
    if unscored := [t for t in names if TASKS[t].headline is None]:
        with_one = ", ".join(n for n, t in TASKS.items() if t.headline is not None)
        raise ValueError(
            f"--tasks {', '.join(unscored)}: no single score to compare; tasks with one: {with_one}"
        )
    return EvalData("tasks", ",".join(names), names, "+".join(names), json_digest(names))


class Scorer:
    """Scores models on one EvalData; ``teacher_rows`` (the teacher's vectors of the texts) for ``texts``."""

    def __init__(self, data: EvalData, data_dir: Path | None, teacher_rows: np.ndarray | None = None) -> None:
        self.data = data
        self.data_dir = data_dir
        self.teacher_rows = teacher_rows

    def __call__(self, model: Any) -> dict[str, Any]:
        """{"score": the headline, "details": every figure of the evaluation}."""
        from sentcl.evaluation.embedding import evaluation_encode_fn

        encode = evaluation_encode_fn(model)
        kind = self.data.kind
        if kind == "texts":
            rows = np.asarray(model.encode(self.data.data, normalize=True))  # (N, D)
            details: dict[str, Any] = teacher_agreement_scores(rows, self.teacher_rows)
        elif kind == "pairs":
            from sentcl.evaluation.pairs import score_pairs

            details = score_pairs(encode, self.data.data)
        elif kind == "retrieval":
            from sentcl.evaluation.retrieval_eval import score_retrieval

            details = score_retrieval(encode, self.data.data)
        else:
            from sentcl.evaluation.runner import evaluate, headline

            found = evaluate(encode, self.data_dir, self.data.data, progress=False)
            details = {task: headline(task, found[task]) for task in self.data.data}
            return {"score": float(np.mean(list(details.values()))), "details": details}
        return {"score": float(details[self.data.headline]), "details": details}


__all__ = ["MAX_TEXTS", "EvalData", "Scorer", "read_eval_data"]
