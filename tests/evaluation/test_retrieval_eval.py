"""sentcl eval --retrieval: BEIR folders, nDCG@10 / MRR@10 / Recall@100 against hand-computed values."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from helpers.beir import write_beir as write_helper

from sentcl.cli import main
from sentcl.data.readers import DataFormatError
from sentcl.evaluation.retrieval_eval import (
    evaluate_retrieval,
    mrr_at_k,
    ndcg_at_k,
    rank,
    read_beir,
    recall_at_k,
)

# text -> embedding, so that every ranking below is known by construction
VECTORS = {
    "doc one": [0.9, 0.1, 0.0],
    "doc two": [0.6, 0.8, 0.0],
    "doc three": [0.0, 1.0, 0.0],
    "doc four": [0.7, 0.0, 0.7],
    "doc five": [0.0, 0.0, 1.0],
    "query x": [1.0, 0.0, 0.0],
    "query z": [0.0, 0.0, 1.0],
    "query y": [0.0, 1.0, 0.0],
    "query w": [1.0, 1.0, 1.0],
}


def fake_encode(texts: list[str]) -> np.ndarray:
    return np.array([VECTORS[t] for t in texts], dtype=np.float32)


DOCS = {f"d{i + 1}": f"doc {w}" for i, w in enumerate(["one", "two", "three", "four", "five"])}
QUERIES = {"q1": "query x", "q2": "query z", "d3": "query y", "q4": "query w"}


def write_beir(folder: Path, qrels: str, split: str = "test") -> Path:
    return write_helper(folder, DOCS, QUERIES, qrels, split)


QRELS = "q1\td2\t2\nq1\td5\t1\nq2\td5\t1\nd3\td3\t0\nd3\td2\t1\nq4\td1\t0\n"


def test_rankings_by_construction(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "b", QRELS)
    assert set(read_beir(folder).qrels) == {"q1", "q2", "d3", "q4"}  # q4 is judged only 0: kept (BEIR)
    data = read_beir(folder, zero_judged="drop")
    assert set(data.qrels) == {"q1", "q2", "d3"} and data.zero_judged_queries == 1
    ranked = rank(fake_encode, data)
    assert ranked["q1"] == ["d1", "d4", "d2", "d3", "d5"]  # cos .994, .707, .6, then ties in corpus order
    assert ranked["q2"] == ["d5", "d4", "d1", "d2", "d3"]
    assert ranked["d3"] == ["d2", "d1", "d4", "d5"]  # the query's own id d3 is not ranked (BEIR)


def test_metrics_match_hand_computed_values(tmp_path: Path) -> None:
    # q1: relevant d2 (2) at rank 3, d5 (1) at rank 5. DCG = 2/log2(4) + 1/log2(6); IDCG = 2/log2(2) + 1/log2(3)
    ndcg_q1 = (2 / 2 + 1 / math.log2(6)) / (2 + 1 / math.log2(3))
    assert ndcg_q1 == pytest.approx(0.527134, abs=1e-6)
    folder = write_beir(tmp_path / "b", QRELS)
    result = evaluate_retrieval(fake_encode, folder, zero_judged="drop")
    assert result["ndcg@10"] == pytest.approx(100 * (ndcg_q1 + 1 + 1) / 3)  # q2, d3: relevant at rank 1
    assert result["mrr@10"] == pytest.approx(100 * (1 / 3 + 1 + 1) / 3)
    assert result["recall@100"] == pytest.approx(100.0)
    assert (result["queries"], result["documents"], result["split"]) == (3, 5, "test")
    kept = evaluate_retrieval(fake_encode, folder)  # the default: q4 (judged only 0) counts with 0
    assert kept["ndcg@10"] == pytest.approx(100 * (ndcg_q1 + 1 + 1 + 0) / 4)
    assert kept["mrr@10"] == pytest.approx(100 * (1 / 3 + 1 + 1 + 0) / 4)
    assert kept["recall@100"] == pytest.approx(100 * 3 / 4)
    assert (kept["queries"], kept["zero_judged"], kept["zero_judged_queries"]) == (4, "keep", 1)
    with pytest.raises(ValueError, match="--zero-judged must be one of keep, drop, got 'skip'"):
        read_beir(folder, zero_judged="skip")


def test_metric_cutoffs() -> None:
    ranked = ["d1", "d4", "d2", "d3", "d5"]
    rel = {"d2": 2, "d5": 1, "d9": 0}
    assert recall_at_k(ranked, rel, 2) == 0.0 and recall_at_k(ranked, rel, 3) == 0.5
    assert mrr_at_k(ranked, rel, 2) == 0.0 and mrr_at_k(ranked, rel, 3) == pytest.approx(1 / 3)
    assert ndcg_at_k(ranked, rel, 3) == pytest.approx((2 / 2) / (2 + 1 / math.log2(3)))
    assert ndcg_at_k(["d2", "d5"], rel, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["d5", "d2"], rel, 10) == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))


@pytest.mark.parametrize(
    ("qrels", "error"),
    [
        ("q1\td9\t1\n", r"qrels/test\.tsv:2: corpus-id 'd9' is not in corpus\.jsonl"),
        ("q9\td1\t1\n", r"qrels/test\.tsv:2: query-id 'q9' is not in queries\.jsonl"),
        ("q1\td1\thigh\n", r"qrels/test\.tsv:2: score 'high' is not a whole number"),
        ("q1\td1\n", r"qrels/test\.tsv:2: missing column score"),
        ("q1\td1\t0\n", r"qrels/test\.tsv: no query has a relevant document"),
    ],
)
def test_bad_qrels_name_file_and_line(tmp_path: Path, qrels: str, error: str) -> None:
    with pytest.raises(DataFormatError, match=error):
        read_beir(write_beir(tmp_path / "b", qrels))


def test_bad_corpus_and_missing_files(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "b", QRELS)
    with pytest.raises(FileNotFoundError, match=r"qrels/dev\.tsv does not exist"):
        read_beir(folder, "dev")
    with (folder / "corpus.jsonl").open("a") as handle:
        handle.write('{"_id": "d6", "title": "t"}\n')
    with pytest.raises(DataFormatError, match=r"corpus\.jsonl:6: missing key 'text'"):
        read_beir(folder)
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "a"}\n{"_id": "d1", "text": "b"}\n')
    with pytest.raises(DataFormatError, match=r"corpus\.jsonl:2: duplicate _id 'd1'"):
        read_beir(folder)
    with pytest.raises(FileNotFoundError, match="does not exist or is not a folder"):
        read_beir(tmp_path / "nowhere")


def test_cli_eval_retrieval_with_tiny_model(tmp_path: Path, tiny_bert: Path, capsys) -> None:  # noqa: ANN001
    folder = write_beir(tmp_path / "b", QRELS)
    out = tmp_path / "r.json"
    argv = ["eval", "--model", str(tiny_bert), "--retrieval", str(folder), "--output", str(out)]
    assert main(argv) == 0
    result = json.loads(out.read_text())[f"retrieval:{folder}"]
    assert 0 < result["ndcg@10"] <= 100 and result["queries"] == 4 and result["recall@100"] == 75.0
    printed = capsys.readouterr().out
    assert (
        "ndcg@10" in printed and '"zero_judged": "keep"' in printed and '"zero_judged_queries": 1' in printed
    )
    assert main([*argv, "--zero-judged", "drop", "--overwrite"]) == 0  # its own earlier result
    dropped = json.loads(out.read_text())[f"retrieval:{folder}"]
    assert (dropped["queries"], dropped["recall@100"], dropped["zero_judged"]) == (3, 100.0, "drop")
    assert dropped["ndcg@10"] == pytest.approx(result["ndcg@10"] * 4 / 3)  # q4 added 0 to the sum
