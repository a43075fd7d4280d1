"""A BEIR-layout folder for the retrieval tests: corpus.jsonl, queries.jsonl and qrels/SPLIT.tsv."""

from __future__ import annotations

import json
from pathlib import Path


def write_beir(
    folder: Path,
    docs: dict[str, str],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]] | str,
    split: str = "test",
) -> Path:
    """Write the folder: documents with an empty title; ``qrels`` as {query: {doc: score}} or the TSV body
    (lines after the ``query-id corpus-id score`` header, written as given)."""
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in docs.items()),
        encoding="utf-8",
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items()), encoding="utf-8"
    )
    if not isinstance(qrels, str):
        qrels = "".join(f"{q}\t{d}\t{s}\n" for q, ds in qrels.items() for d, s in ds.items())
    (folder / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels, encoding="utf-8")
    return folder
