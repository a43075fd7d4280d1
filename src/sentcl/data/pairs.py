"""Paired training data (x, x+) for supervised contrastive training without hard negatives (SimCSE Table 4).

One pair a record, in one of three formats chosen by the file's extension:

- ``.csv``: comma-separated, header ``sent0,sent1`` (SimCSE's column names), quoting as Python's csv module
  writes it (``"a, b"``, ``""`` for a quote inside a quoted field);
- ``.tsv``: tab-separated, header ``sent0<TAB>sent1``, no quoting (a quote character is text);
- ``.jsonl``: one JSON object a line with string fields ``sent0`` and ``sent1`` (other keys are an error).

Parsing is strict: every record sits on ONE line (a quoted field holding a newline, or an unbalanced quote,
is an error), has exactly two non-empty fields, and is valid UTF-8; each error names the file and line.
Blank lines are skipped and counted.
"""

from __future__ import annotations

from pathlib import Path

from sentcl.data.readers import Corpus, DataFormatError, require_file
from sentcl.data.tables import iter_records

HEADER = ("sent0", "sent1")
FORMATS = (".csv", ".tsv", ".jsonl")


def _jsonl_fields(record: dict, path: Path, lineno: int) -> list[str]:
    if set(record) != set(HEADER):
        raise DataFormatError(
            f"{path}:{lineno}: expected an object with keys sent0, sent1; got {sorted(record)}"
        )
    for name in HEADER:
        if not isinstance(record[name], str):
            raise DataFormatError(f"{path}:{lineno}: field {name!r} must be a string, got {record[name]!r}")
    return [record["sent0"], record["sent1"]]


def read_pairs(path: str | Path, max_examples: int | None = None) -> Corpus:
    """(sent0, sent1) tuples from a .csv, .tsv or .jsonl pair file (see the module doc).

    Records come from ``sentcl.data.tables.iter_records`` (the strict csv/tsv/jsonl reader).
    """
    path = Path(path)
    require_file(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise DataFormatError(f"{path}: pair files are {', '.join(FORMATS)} (by extension), not {suffix!r}")
    pairs: list[tuple[str, str]] = []
    skipped = {"empty_lines": 0}
    header_seen = suffix == ".jsonl"
    for lineno, record in iter_records(path, suffix[1:], skipped, key="empty_lines"):
        if suffix == ".jsonl":
            fields = _jsonl_fields(record, path, lineno)
        elif any("\r" in field for field in record):
            raise DataFormatError(f"{path}:{lineno}: a carriage return inside the line")
        else:
            fields = record
        if not header_seen:
            if tuple(f.strip() for f in fields) != HEADER:
                sep, shown = ("\t", "<TAB>") if suffix == ".tsv" else (",", ",")
                raise DataFormatError(
                    f"{path}:{lineno}: the first line must be the header sent0{shown}sent1, "
                    f"got {sep.join(fields)[:80]!r}"
                )
            header_seen = True
            continue
        if len(fields) != 2:
            raise DataFormatError(f"{path}:{lineno}: expected 2 fields (sent0, sent1), got {len(fields)}")
        for name, value in zip(HEADER, fields, strict=True):
            if not value.strip():
                raise DataFormatError(f"{path}:{lineno}: field {name!r} is empty")
        pairs.append((fields[0].strip(), fields[1].strip()))
        if max_examples is not None and len(pairs) >= max_examples:
            break
    if not header_seen:
        raise DataFormatError(f"{path}:1: the file is empty (expected the header sent0,sent1 and pairs)")
    return Corpus(path, pairs, skipped)
