"""BEIR folders with a query judged only 0: the default (``zero_judged="keep"``) counts it with 0, as BEIR's
pytrec_eval average does; ``"drop"`` leaves it out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.beir import write_beir

from sentcl.evaluation.retrieval_eval import evaluate_retrieval

pytrec_eval = pytest.importorskip("pytrec_eval")
VECS = {
    "apple pie": [1, 0, 0],
    "banana bread": [0.9, 0.3, 0],
    "car engine": [0, 1, 0],
    "boat sail": [0, 0.8, 0.6],
    "red fruit": [1, 0.1, 0],
    "fast vehicle": [0.1, 1, 0.1],
    "sea trip": [0, 0.5, 1],
}


def encode(texts: list[str]) -> np.ndarray:
    return np.asarray([VECS[t.strip()] for t in texts], dtype=np.float32)


def test_query_judged_only_zero_counts_as_beir_does(tmp_path: Path) -> None:
    docs = {"d1": "apple pie", "d2": "banana bread", "d3": "car engine", "d4": "boat sail"}
    queries = {"q1": "red fruit", "q2": "fast vehicle", "q3": "sea trip"}
    qrels = {"q1": {"d1": 2, "d2": 1}, "q2": {"d3": 1}, "q3": {"d4": 0, "d1": 0}}  # q3: judged, none relevant
    folder = write_beir(tmp_path / "b", docs, queries, qrels)
    got = evaluate_retrieval(encode, folder)  # the default: q3 counts, with 0
    dropped = evaluate_retrieval(encode, folder, zero_judged="drop")
    assert dropped["queries"] == 2 and dropped["ndcg@10"] == pytest.approx(got["ndcg@10"] * 3 / 2)
    assert (got["zero_judged_queries"], dropped["zero_judged_queries"]) == (1, 1)
    # the reference: pytrec_eval on cosine scores, averaged over every query it returns (BEIR's mean)
    d = encode(list(docs.values()))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    run = {}
    for qid, text in queries.items():
        q = encode([text])[0]
        q /= np.linalg.norm(q)
        run[qid] = {did: float(s) for did, s in zip(docs, d @ q, strict=True)}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"}).evaluate(run)
    assert set(per_query) == {"q1", "q2", "q3"} and got["queries"] == 3
    for ours, theirs in (("ndcg@10", "ndcg_cut_10"), ("recall@100", "recall_100")):
        assert got[ours] == pytest.approx(100 * np.mean([v[theirs] for v in per_query.values()]), abs=1e-9)
