"""(anchor, positive) pairs files for ``sentcl mine``: CSV, TSV or JSONL, parsed strictly.

* CSV / TSV (by extension ``.csv`` / ``.tsv``): a header row, then one pair a row with as many fields as
  the header; an empty field is an error. CSV: fields may be quoted, but may not span lines (an unbalanced
  quote is an error, never a field that swallows the following rows). TSV: fields are split on tabs,
  quotes are plain text.
* JSONL (``.jsonl``): one JSON object a line.

The anchor and positive columns are named by the caller, or found among ``anchor``/``sent0``/``query``
and ``positive``/``sent1``. Blank lines are skipped. Every error names file and line: the records come from
``sentcl.data.tables.iter_records``, the project's one strict table reader.
"""

from __future__ import annotations

import logging
from pathlib import Path

from sentcl.data.readers import DataFormatError, require_file
from sentcl.data.tables import iter_records, refuse_repeated_names

logger = logging.getLogger(__name__)
ANCHOR_NAMES = ("anchor", "sent0", "query")
POSITIVE_NAMES = ("positive", "sent1")
FORMATS = (".csv", ".tsv", ".jsonl")


def _pick(path: Path, names: list[str], given: str | None, defaults: tuple[str, ...], what: str) -> str:
    if given is not None:
        if given not in names:
            raise DataFormatError(f"{path}:1: no {what} column {given!r}; columns: {', '.join(names)}")
        return given
    for name in defaults:
        if name in names:
            return name
    raise DataFormatError(
        f"{path}:1: no {what} column (looked for {', '.join(defaults)}; columns: {', '.join(names)}); "
        f"name it with --{what}-column"
    )


def _read_delimited(
    path: Path, fmt: str, anchor: str | None, positive: str | None
) -> list[tuple[int, str, str]]:
    pairs: list[tuple[int, str, str]] = []
    header: list[str] | None = None
    a_col = p_col = 0
    for lineno, row in iter_records(path, fmt):
        if header is None:
            header = [name.strip() for name in row]
            refuse_repeated_names(path, header)
            a_name = _pick(path, header, anchor, ANCHOR_NAMES, "anchor")
            p_name = _pick(path, header, positive, POSITIVE_NAMES, "positive")
            a_col, p_col = header.index(a_name), header.index(p_name)
            continue
        if len(row) != len(header):
            raise DataFormatError(
                f"{path}:{lineno}: expected {len(header)} fields ({','.join(header)}), got {len(row)}"
            )
        a, p = row[a_col].strip(), row[p_col].strip()
        for name, value in ((header[a_col], a), (header[p_col], p)):
            if not value:
                raise DataFormatError(f"{path}:{lineno}: field {name!r} is empty")
        pairs.append((lineno, a, p))
    if header is None:
        raise DataFormatError(f"{path}: the file is empty (expected a header row, then pairs)")
    return pairs


def _read_jsonl(path: Path, anchor: str | None, positive: str | None) -> list[tuple[int, str, str]]:
    pairs: list[tuple[int, str, str]] = []
    for lineno, obj in iter_records(path, "jsonl"):
        names = list(obj)
        a_name = _pick(path, names, anchor, ANCHOR_NAMES, "anchor")
        p_name = _pick(path, names, positive, POSITIVE_NAMES, "positive")
        values = []
        for name in (a_name, p_name):
            value = obj[name]
            if not isinstance(value, str) or not value.strip():
                raise DataFormatError(f"{path}:{lineno}: {name!r} must be a non-empty string, got {value!r}")
            values.append(value.strip())
        pairs.append((lineno, values[0], values[1]))
    return pairs


def read_pairs(
    path: str | Path, anchor_column: str | None = None, positive_column: str | None = None
) -> list[tuple[int, str, str]]:
    """(line number, anchor, positive) per pair, in file order; DataFormatError naming file:line if bad."""
    path = Path(path)
    require_file(path, "pairs file")  # missing, a directory, a FIFO, a link loop, unreadable: said as such
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise DataFormatError(f"{path}: unknown pairs format {suffix!r}; use .csv, .tsv or .jsonl")
    if suffix == ".jsonl":
        pairs = _read_jsonl(path, anchor_column, positive_column)
    else:
        pairs = _read_delimited(path, suffix[1:], anchor_column, positive_column)
    if not pairs:
        raise DataFormatError(f"{path}: no (anchor, positive) pair in the file")
    return pairs
