"""Scored pairs (sentence 1, sentence 2, score) as training examples, for CoSENT.

One reader for a user's scored pairs, training and evaluation alike: ``sentcl.evaluation.pairs.read_pairs``
(TSV/CSV/JSONL through ``sentcl.data.tables``, UTF-8 and NFC, every bad row an error naming file:line).
Columns are found by header name (sentence1/sent1/text_a/..., score/label/similarity/...), or, in a file
without a header, as the two text columns and the one numeric column, so KorSTS (with its header) and the
Chinese STS-B (``sent1<TAB>sent2<TAB>score``) read as they are.

- reader ``scored_pairs``: any such file;
- reader ``stsb``: the STS Benchmark's own layout (tab-separated genre, file, year, id, score, sentence1,
  sentence2 [, extra columns], no header; the ``.csv`` files are TSV), e.g. ``senteval/STS/STSBenchmark/
  sts-train.csv``.

Examples are ``(sentence1, sentence2, score)`` tuples in file order; the score scale does not matter to
CoSENT (only the order of scores does).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sentcl.data.readers import Corpus, require_file

ScoredPair = tuple[str, str, float]
STSB_COLUMNS = ("5", "6", "4")  # sentence1, sentence2, score (0-based) of STS Benchmark's TSV


def read_scored_pairs(
    path: str | Path,
    max_examples: int | None = None,
    columns: Sequence[str | int] | None = None,
    fmt: str | None = None,
    extra_fields: bool = False,
) -> Corpus:
    """(sentence1, sentence2, score) tuples of a scored-pairs file (see the module doc); a ragged row or a
    repeated header name is an error naming file:line (``sentcl.data.tables``)."""
    from sentcl.evaluation.pairs import read_pairs

    path = Path(path)
    require_file(path)
    data = read_pairs(path, columns=columns, fmt=fmt, extra_fields=extra_fields)
    examples: list[ScoredPair] = [(s1, s2, float(score)) for s1, s2, score in data.pairs]
    if max_examples is not None:
        examples = examples[:max_examples]
    return Corpus(path, examples, {})


def read_stsb_pairs(path: str | Path, max_examples: int | None = None) -> Corpus:
    """The STS Benchmark's TSV layout (score column 4, sentences 5 and 6, no header)."""
    return read_scored_pairs(path, max_examples, columns=STSB_COLUMNS, fmt="tsv", extra_fields=True)
