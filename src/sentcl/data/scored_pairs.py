"""Scored pairs (sentence 1, sentence 2, score) as training examples, for CoSENT.

One reader for a user's scored pairs, training and evaluation alike: ``read_pairs`` below
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

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sentcl.data.readers import Corpus, DataFormatError, require_file
from sentcl.data.tables import Table, _is_number, cell, check_width, column_index, read_table

ScoredPair = tuple[str, str, float]
STSB_COLUMNS = ("5", "6", "4")  # sentence1, sentence2, score (0-based) of STS Benchmark's TSV


def normalize_spaces(sentence: str) -> str:
    """SentEval tokenises with str.split(); SimCSE's batcher joins the tokens with one space."""
    return " ".join(sentence.split())


NAMES = {
    "sentence 1": ("sentence1", "sent1", "sentence_a", "sentence_1", "text1", "text_a", "s1"),
    "sentence 2": ("sentence2", "sent2", "sentence_b", "sentence_2", "text2", "text_b", "s2"),
    "score": ("score", "label", "similarity", "relatedness_score", "gold", "gold_score"),
}
ROLES = tuple(NAMES)


@dataclass
class PairsFile:
    path: Path
    pairs: list[ScoredPair]
    columns: tuple[str, str, str]  # as found: header names, or "#index"
    score_range: tuple[float, float]
    range_given: bool


def _detect(table: Table) -> list[int]:
    if table.header is not None:
        lowered = [h.lower() for h in table.header]
        found = [next((lowered.index(n) for n in NAMES[role] if n in lowered), None) for role in ROLES]
        if all(i is not None for i in found):
            return found  # type: ignore[return-value]
        missing = [role for role, i in zip(ROLES, found, strict=True) if i is None]
        raise DataFormatError(
            f"{table.path}:1: cannot tell which column holds the {' and the '.join(missing)} (columns: "
            f"{', '.join(table.header)}); name them with --columns S1,S2,SCORE (or a missing column?)"
        )
    sample = [fields for _, fields in table.rows[:100]]
    width = min(len(f) for f in sample)
    # a score column is numeric in most rows (a stray non-number is then reported on its own line)
    numeric = [i for i in range(width) if 2 * sum(_is_number(f[i]) for f in sample) >= len(sample)]
    text = [i for i in range(width) if i not in numeric]
    if len(numeric) == 1 and len(text) == 2:
        return [text[0], text[1], numeric[0]]
    lineno = table.rows[0][0]
    raise DataFormatError(
        f"{table.path}:{lineno}: cannot detect the columns of a file without a header ({width} fields, "
        f"{len(numeric)} numeric): pass --columns S1,S2,SCORE as 0-based indices (or a score is not a number?)"
    )


def read_pairs(
    path: str | Path,
    columns: Sequence[str | int] | None = None,
    score_range: tuple[float, float] | None = None,
    fmt: str | None = None,
    extra_fields: bool = False,
) -> PairsFile:
    """Read (sentence 1, sentence 2, score) pairs; every malformed row is an error naming file:line, a row
    with more or fewer fields than the header (or the first row) included, unless ``extra_fields`` (a layout
    with trailing notes past the columns used, as STS-B's)."""
    known = {n for names in NAMES.values() for n in names}
    table = read_table(path, fmt=fmt, known=known, extra_fields=extra_fields)
    if columns is not None:
        if len(columns) != 3:
            raise ValueError(f"columns must be (sentence 1, sentence 2, score), got {list(columns)}")
        index = [column_index(table, spec, role) for spec, role in zip(columns, ROLES, strict=True)]
    else:
        index = _detect(table)
    pairs: list[ScoredPair] = []
    for lineno, fields in table.rows:
        s1, s2, raw = (cell(table, lineno, fields, i, role) for i, role in zip(index, ROLES, strict=True))
        check_width(table, lineno, fields)  # after cell(): a used column's own "missing column" comes first
        for role, value in (("sentence 1", s1), ("sentence 2", s2)):
            if not isinstance(value, str) or not value.strip():
                raise DataFormatError(f"{table.path}:{lineno}: {role} is empty or not text ({value!r})")
        score = float(raw) if _is_number(raw) else None
        if score is None or not math.isfinite(score):
            raise DataFormatError(f"{table.path}:{lineno}: score {raw!r} is not a number")
        if score_range is not None and not score_range[0] <= score <= score_range[1]:
            raise DataFormatError(
                f"{table.path}:{lineno}: score {score:g} is outside the given range {score_range[0]:g}..{score_range[1]:g}"
            )
        pairs.append((normalize_spaces(s1), normalize_spaces(s2), score))
    if len(pairs) < 2:
        raise DataFormatError(f"{table.path}: a correlation needs at least 2 pairs, found {len(pairs)}")
    names = tuple(table.header[i] if table.header else f"#{i}" for i in index)
    scores = [p[2] for p in pairs]
    found_range = score_range or (min(scores), max(scores))
    return PairsFile(table.path, pairs, names, found_range, score_range is not None)  # type: ignore[arg-type]


def read_scored_pairs(
    path: str | Path,
    max_examples: int | None = None,
    columns: Sequence[str | int] | None = None,
    fmt: str | None = None,
    extra_fields: bool = False,
) -> Corpus:
    """(sentence1, sentence2, score) tuples of a scored-pairs file (see the module doc); a ragged row or a
    repeated header name is an error naming file:line (``sentcl.data.tables``)."""
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
