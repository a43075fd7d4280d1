"""Retrieval on a user's own BEIR-layout folder: ``sentcl eval --retrieval DIR`` and ``eval.dev_task: retrieval:DIR``.

Layout (BEIR's): ``corpus.jsonl`` ({"_id", "title", "text"}), ``queries.jsonl`` ({"_id", "text"}) and
``qrels/<split>.tsv`` (header ``query-id corpus-id score``; score > 0 is relevant, graded). A document is
embedded as ``title + " " + text`` (BEIR's convention for dense models); documents are ranked by cosine, ties
in corpus order, and a document whose id equals the query's is not ranked (BEIR's ``ignore_identical_ids``).

Metrics, each a mean in percent (×100) over the queries of the qrels. A query judged only with score 0
(no relevant document) is a choice, ``zero_judged`` (``sentcl eval --zero-judged``):

- ``keep`` (default): it counts, with 0 on every metric, as in BEIR (its loader keeps every query of the
  qrels; ``EvaluateRetrieval.evaluate`` averages pytrec_eval's per-query scores over every query);
- ``drop``: it is left out of the means (the mean over the queries with a relevant document).

The result names the choice and the number of such queries (``zero_judged``, ``zero_judged_queries``).

- nDCG@10 = DCG@10 / IDCG@10 with DCG@k = Σ_{i≤k} rel_i / log2(i + 1) (trec_eval's linear gain, as BEIR's
  pytrec_eval), IDCG@k the DCG of the qrels sorted by relevance;
- MRR@10 = 1 / rank of the first relevant document within the top 10 (0 if none);
- Recall@100 = |relevant ∩ top 100| / |relevant|.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.config.names import DEFAULT_ZERO_JUDGED, ZERO_JUDGED
from sentcl.data.readers import DataFormatError
from sentcl.data.tables import cell, check_width, column_index, read_table
from sentcl.files.pathcheck import check_input_dir
from sentcl.similarity import unit_rows
from sentcl.types import EncodeFn

logger = logging.getLogger(__name__)
Qrels = dict[str, dict[str, int]]  # query id -> document id -> relevance


@dataclass
class BeirFolder:
    path: Path
    corpus: dict[str, str]  # document id -> "title text"
    queries: dict[str, str]
    qrels: Qrels  # the queries scored (with zero_judged "drop": only those with a relevant document)
    split: str
    zero_judged: str = DEFAULT_ZERO_JUDGED
    zero_judged_queries: int = 0  # queries of the qrels judged only with score 0 (kept or dropped)


def _records(path: Path, keys: Sequence[str], optional: Sequence[str] = ()) -> dict[str, dict[str, str]]:
    """id -> {key: text} of a JSONL file; a missing key, a non-text value or a repeated _id names the line."""
    table = read_table(path, fmt="jsonl")
    header = table.header or []
    out: dict[str, dict[str, str]] = {}
    for lineno, fields in table.rows:
        record = {}
        for key in (*keys, *optional):
            if key in optional and key not in header:
                record[key] = ""
                continue
            value = cell(table, lineno, fields, column_index(table, key, key), key)
            if key == "_id" and isinstance(value, int) and not isinstance(value, bool):
                value = str(value)
            if key in optional and value is None:
                value = ""
            if not isinstance(value, str):
                raise DataFormatError(f"{path}:{lineno}: {key!r} is not a string ({value!r})")
            record[key] = value
        if record["_id"] in out:
            raise DataFormatError(f"{path}:{lineno}: duplicate _id {record['_id']!r}")
        out[record["_id"]] = record
    return out


def read_beir(folder: str | Path, split: str = "test", zero_judged: str = DEFAULT_ZERO_JUDGED) -> BeirFolder:
    """Read a BEIR folder; a missing file, unknown id or bad score is an error naming the file and line.
    ``zero_judged``: keep or drop the queries judged only with score 0 (module doc)."""
    if zero_judged not in ZERO_JUDGED:
        raise ValueError(f"--zero-judged must be one of {', '.join(ZERO_JUDGED)}, got {zero_judged!r}")
    folder = Path(folder)
    if not os.path.lexists(folder):
        raise FileNotFoundError(f"retrieval folder {folder} does not exist or is not a folder")
    check_input_dir(folder, "retrieval folder", DataFormatError)  # a file, a FIFO, a link loop: said as such
    corpus = {
        i: f"{r.get('title', '')} {r['text']}".strip()
        for i, r in _records(folder / "corpus.jsonl", ("_id", "text"), ("title",)).items()
    }
    queries = {i: r["text"] for i, r in _records(folder / "queries.jsonl", ("_id", "text")).items()}
    qrels_path = folder / "qrels" / f"{split}.tsv"
    table = read_table(qrels_path, fmt="tsv", header=True)
    columns = [column_index(table, name, name) for name in ("query-id", "corpus-id", "score")]
    qrels: Qrels = {}
    for lineno, fields in table.rows:
        qid, did, raw = (
            cell(table, lineno, fields, i, n)
            for i, n in zip(columns, ("query-id", "corpus-id", "score"), strict=True)
        )
        check_width(table, lineno, fields)
        try:
            score = int(raw)
        except ValueError:
            raise DataFormatError(f"{qrels_path}:{lineno}: score {raw!r} is not a whole number") from None
        if qid not in queries:
            raise DataFormatError(f"{qrels_path}:{lineno}: query-id {qid!r} is not in queries.jsonl")
        if did not in corpus:
            raise DataFormatError(f"{qrels_path}:{lineno}: corpus-id {did!r} is not in corpus.jsonl")
        qrels.setdefault(qid, {})[did] = score
    judged = {q: docs for q, docs in qrels.items() if any(s > 0 for s in docs.values())}
    if not judged:
        raise DataFormatError(f"{qrels_path}: no query has a relevant document (score > 0)")
    zero = len(qrels) - len(judged)
    if zero:
        logger.info(
            "%s: %d of %d queries are judged only with score 0 (%s: --zero-judged)",
            qrels_path,
            zero,
            len(qrels),
            "counted with 0 as BEIR does" if zero_judged == "keep" else "left out of the means",
        )
    scored = qrels if zero_judged == "keep" else judged
    return BeirFolder(folder, corpus, queries, scored, split, zero_judged, zero)


# ---------------------------------------------------------------------- metrics on one ranking


def ndcg_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    dcg = sum(relevance.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((r for r in relevance.values() if r > 0), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def mrr_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    return next((1.0 / (i + 1) for i, d in enumerate(ranked[:k]) if relevance.get(d, 0) > 0), 0.0)


def recall_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    relevant = {d for d, r in relevance.items() if r > 0}
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else 0.0


# ---------------------------------------------------------------------- ranking and evaluation


def rank(encode: EncodeFn, data: BeirFolder, depth: int = 100, chunk: int = 256) -> dict[str, list[str]]:
    """Query id -> the top ``depth`` document ids by cosine (ties in corpus order; the query's own id left out)."""
    doc_ids = list(data.corpus)
    query_ids = list(data.qrels)
    docs = unit_rows(np.asarray(encode([data.corpus[d] for d in doc_ids]), dtype=np.float32))  # (n_docs, D)
    queries = unit_rows(
        np.asarray(encode([data.queries[q] for q in query_ids]), dtype=np.float32)
    )  # (n_q, D)
    position = {d: i for i, d in enumerate(doc_ids)}
    ranked: dict[str, list[str]] = {}
    keep = min(depth + 1, len(doc_ids))  # one spare for the query's own id
    for start in range(0, len(query_ids), chunk):
        sims = queries[start : start + chunk] @ docs.T  # (chunk, n_docs)
        for row, qid in zip(sims, query_ids[start : start + chunk], strict=False):
            own = position.get(qid)
            if own is not None:
                row[own] = -np.inf
            top = np.argsort(-row, kind="stable")[:keep]  # (keep,)
            ranked[qid] = [doc_ids[i] for i in top if i != own][:depth]
    return ranked


def evaluate_retrieval(
    encode: EncodeFn, folder: str | Path, split: str = "test", zero_judged: str = DEFAULT_ZERO_JUDGED
) -> dict[str, Any]:
    """Read a BEIR folder (``read_beir``) and score it (``score_retrieval``)."""
    return score_retrieval(encode, read_beir(folder, split, zero_judged))


def score_retrieval(encode: EncodeFn, data: BeirFolder) -> dict[str, Any]:
    """{"ndcg@10", "mrr@10", "recall@100" (percent), "queries" (scored), "zero_judged" (keep/drop),
    "zero_judged_queries" (judged only 0), "documents", "split", "folder"}."""
    ranked = rank(encode, data, depth=100)
    scores = {
        "ndcg@10": [ndcg_at_k(ranked[q], rel, 10) for q, rel in data.qrels.items()],
        "mrr@10": [mrr_at_k(ranked[q], rel, 10) for q, rel in data.qrels.items()],
        "recall@100": [recall_at_k(ranked[q], rel, 100) for q, rel in data.qrels.items()],
    }
    result: dict[str, Any] = {name: 100.0 * float(np.mean(v)) for name, v in scores.items()}
    return result | {
        "queries": len(data.qrels),
        "zero_judged": data.zero_judged,
        "zero_judged_queries": data.zero_judged_queries,
        "documents": len(data.corpus),
        "split": data.split,
        "folder": str(data.path),
    }


def dev_split(folder: Path) -> str:
    """The split a dev task scores: ``dev`` when qrels/dev.tsv exists, else ``test`` (logged)."""
    if (folder / "qrels" / "dev.tsv").is_file():
        return "dev"
    logger.warning("%s has no qrels/dev.tsv: the dev task scores qrels/test.tsv", folder)
    return "test"
