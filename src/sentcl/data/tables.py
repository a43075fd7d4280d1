"""Strict readers of a user's tables: TSV, CSV and JSONL, one reader for all, errors naming file and line.

- **TSV** is split on tabs with no quoting (STS-B and KorSTS sentences hold unbalanced quotes).
- **CSV** is parsed with ``csv``'s strict mode, one record per physical line: a field holding a line break
  (almost always an unbalanced quote that would swallow the following rows) is an error naming the line
  where the record starts, never a silent merge of rows.
- **JSONL** is one JSON object a line; its header is the first object's keys.

Text is UTF-8 (a BOM is dropped) and NFC-normalised, so precomposed and decomposed Hangul (or accented
Latin) read the same. Blank lines are skipped and counted.

Shape: every TSV/CSV row has as many fields as the header (or, without one, as the first row). A row with more
(a tab or comma inside a sentence would otherwise cut it short silently) is an error naming file:line and the
counts when the table is read; a row with fewer is one when its fields are taken (``check_width``, after the
reader's own "missing column" message for a column it uses). A header naming a column twice (any case) is an
error naming the column, as is a JSON object with a repeated key: which one is meant cannot be guessed.
"""

from __future__ import annotations

import csv
import json
import unicodedata
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sentcl.data.readers import DataFormatError, decode_line, require_file
from sentcl.files.budget import bounded_lines
from sentcl.files.read import parse_json_line

FORMATS = ("tsv", "csv", "jsonl")
_BY_SUFFIX = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl"}


@dataclass
class Table:
    """Rows of a file as (line number, fields); ``header`` when the file has one (JSONL: the first keys)."""

    path: Path
    format: str
    header: list[str] | None
    rows: list[tuple[int, list[Any]]]
    skipped: dict[str, int] = field(default_factory=dict)
    width: int = 0  # fields a row must have (TSV/CSV: the header's, else the first row's); 0: not checked
    extra_fields: bool = False  # a fixed layout whose rows may carry trailing notes (STS-B's): not checked


def decoded_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text with its line ending) of a UTF-8 file (a BOM dropped); bad bytes name the line.
    The path is checked first (``require_file``): a FIFO or a link loop is an error, never a hang."""
    require_file(Path(path), "file")
    with open(path, "rb") as handle:
        for lineno, raw, _ in bounded_lines(handle, path, refuse=DataFormatError):  # over the budget: refused
            text = decode_line(raw, path, lineno)
            yield lineno, text.removeprefix("\ufeff") if lineno == 1 else text


def _csv_rows(path: Path, delimiter: str) -> Iterator[tuple[int, str, list[str]]]:
    """(line number, text of that line, fields) of a strict CSV file; see ``iter_csv_records``."""
    last = [""]  # the text of the line the csv reader took last: a record's text, as records are one line

    def texts() -> Iterator[str]:
        for _, last[0] in decoded_lines(path):
            yield last[0]

    reader = csv.reader(texts(), delimiter=delimiter, strict=True)
    start = 1
    try:
        for row in reader:
            if reader.line_num != start:
                raise DataFormatError(
                    f"{path}:{start}: a field runs over a line break into line {reader.line_num} "
                    "(an unbalanced quote?); fields may not contain line breaks"
                )
            yield start, last[0], row
            start = reader.line_num + 1
    except csv.Error as err:
        if reader.line_num > start:
            raise DataFormatError(
                f"{path}:{start}: a field runs over a line break to line {reader.line_num} (an unbalanced "
                f"quote?; {err}); fields may not contain line breaks"
            ) from None
        hint = " (an unbalanced quote?)" if "end of data" in str(err) else ""
        raise DataFormatError(f"{path}:{start}: malformed csv: {err}{hint}") from None


def iter_csv_records(path: Path, delimiter: str = ",") -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of a strict CSV file, every record included (a blank line gives ``[]``).

    A record spanning lines (a quoted field holding a line break, almost always an unbalanced quote that
    would swallow the following rows) or a stray quote is an error naming the line where the record starts.
    """
    for lineno, _, row in _csv_rows(path, delimiter):
        yield lineno, row


def iter_records(
    path: Path, fmt: str, skipped: dict[str, int] | None = None, key: str = "blank_lines"
) -> Iterator[tuple[int, Any]]:
    """(line number, record) of a strict ``fmt`` file: a list of fields (csv, tsv) or a dict (jsonl).

    Lines of whitespace only are skipped and counted in ``skipped[key]`` when ``skipped`` is given.
    TSV is split on tabs with no quoting; CSV and JSONL are parsed strictly (see the module doc).
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown table format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if fmt == "csv":
        rows: Iterator[tuple[int, str, Any]] = _csv_rows(path, ",")
    else:
        rows = ((lineno, text, text) for lineno, text in decoded_lines(path))
    for lineno, text, row in rows:
        if not text.strip():
            if skipped is not None:
                skipped[key] = skipped.get(key, 0) + 1
            continue
        if fmt == "tsv":
            row = text.rstrip("\r\n").split("\t")
        elif fmt == "jsonl":
            row = parse_json_line(path, lineno, text, dict, DataFormatError)
            _refuse_repeated_keys(path, lineno, text)
        yield lineno, row


def _refuse_repeated_keys(path: Path, lineno: int, text: str) -> None:
    """A JSON object naming a key twice is an error (``json`` would keep the last one silently)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in items:
            if key in seen:
                raise DataFormatError(f"{path}:{lineno}: key {key!r} appears twice in one object")
            seen.add(key)
        return dict(items)

    json.loads(text, object_pairs_hook=pairs)


def detect_format(path: Path, fmt: str | None = None) -> str:
    """``fmt`` if given, else by suffix, else JSONL for a line starting '{', TSV for one with a tab, else CSV."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown table format {fmt!r}; expected one of {', '.join(FORMATS)}")
        return fmt
    if path.suffix.lower() in _BY_SUFFIX:
        return _BY_SUFFIX[path.suffix.lower()]
    first = next((text for _, text in decoded_lines(path) if text.strip()), "")
    return "jsonl" if first.lstrip().startswith("{") else "tsv" if "\t" in first else "csv"


def _is_number(text: Any) -> bool:
    if isinstance(text, int | float) and not isinstance(text, bool):
        return True
    try:
        float(str(text))
    except ValueError:
        return False
    return True


def _nfc(value: Any) -> Any:
    return unicodedata.normalize("NFC", value) if isinstance(value, str) else value


def read_table(
    path: str | Path,
    fmt: str | None = None,
    header: bool | None = None,
    known: Collection[str] = (),
    extra_fields: bool = False,
) -> Table:
    """Read a TSV/CSV/JSONL file. ``header``: True/False, or None to detect it (``has_header(rows, known)``).
    ``extra_fields``: rows may carry fields past the header's / first row's (a known layout with trailing
    notes, as the STS Benchmark's); otherwise such a row is an error (see the module doc)."""
    path = Path(path)
    require_file(path, "file")
    fmt = detect_format(path, fmt)
    skipped = {"blank_lines": 0}
    if fmt == "jsonl":
        records = list(iter_records(path, fmt))
        if not records:
            raise DataFormatError(f"{path}: the file is empty (no JSON records)")
        names = [str(k) for k in records[0][1]]
        rows = [(n, [_nfc(r.get(k, _MISSING)) for k in names]) for n, r in records]
        for lineno, record in records:
            extra = [k for k in record if k not in names]
            if extra:
                raise DataFormatError(f"{path}:{lineno}: keys {extra} are not in the first record's {names}")
        return Table(path, fmt, names, rows)
    rows = []
    for lineno, fields in iter_records(path, fmt, skipped):
        if all(not f.strip() for f in fields):
            skipped["blank_lines"] += 1
            continue
        rows.append((lineno, [_nfc(f) for f in fields]))
    if not rows:
        raise DataFormatError(f"{path}: the file is empty (no rows)")
    if header is None:
        header = has_header(rows, known)
    names = [f.strip() for f in rows.pop(0)[1]] if header else None
    if header and not rows:
        raise DataFormatError(f"{path}: the file has a header but no rows")
    width = len(names) if names is not None else len(rows[0][1])
    table = Table(path, fmt, names, rows, skipped, width, extra_fields)
    if names is not None:
        refuse_repeated_names(path, names)
    for lineno, fields in rows:
        if len(fields) > table.width:
            check_width(table, lineno, fields)
    return table


def refuse_repeated_names(path: Path, names: Sequence[str]) -> None:
    """A header naming a column twice (any case) is an error naming it: which one is meant cannot be told."""
    first: dict[str, int] = {}
    for i, name in enumerate(names):
        if name and name.lower() in first:
            raise DataFormatError(
                f"{path}:1: the header names column {name!r} twice (columns {first[name.lower()] + 1} and "
                f"{i + 1}); which one is meant cannot be told: rename or remove one"
            )
        first.setdefault(name.lower(), i)


def check_width(table: Table, lineno: int, fields: Sequence[Any]) -> None:
    """A TSV/CSV row must have ``table.width`` fields; else an error naming file:line and both counts."""
    if table.format == "jsonl" or not table.width or len(fields) == table.width:
        return
    if table.extra_fields:
        return  # the layout's used columns were checked by ``cell``; the rest are notes of any length
    where = "the header has" if table.header is not None else f"line {table.rows[0][0]} has"
    sep = "tab" if table.format == "tsv" else "comma"
    why = f"a {sep} inside a field?" if len(fields) > table.width else "a missing field?"
    raise DataFormatError(
        f"{table.path}:{lineno}: the row has {len(fields)} fields, {where} {table.width} ({why})"
    )


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


def has_header(rows: Sequence[tuple[int, list[Any]]], known: Collection[str] = ()) -> bool:
    """The first row is a header if it holds a ``known`` column name (any case), or has no number in a column
    where the second row has one."""
    if any(str(f).strip().lower() in known for f in rows[0][1]):
        return True
    if len(rows) < 2:
        return False
    first, second = rows[0][1], rows[1][1]
    return any(_is_number(b) and not _is_number(a) for a, b in zip(first, second, strict=False))


def column_index(table: Table, spec: str | int, role: str) -> int:
    """The index of a column given by name (needs a header) or 0-based index; errors list the columns."""
    if isinstance(spec, int) or (isinstance(spec, str) and spec.isdigit()):
        index = int(spec)
        if table.format == "jsonl":
            return _named(
                table, table.header[index] if table.header and index < len(table.header) else spec, role
            )
        return index
    return _named(table, spec, role)


def _named(table: Table, name: str | int, role: str) -> int:
    if table.header is None:
        raise DataFormatError(
            f"{table.path}:1: no header row, so the {role} column cannot be named {name!r}; give its index"
        )
    lowered = [h.lower() for h in table.header]
    if str(name).lower() not in lowered and table.format == "jsonl":
        lineno = table.rows[0][0] if table.rows else 1
        raise DataFormatError(
            f"{table.path}:{lineno}: missing key {name!r} ({role}); keys: {', '.join(table.header)}"
        )
    if str(name).lower() not in lowered:
        raise DataFormatError(
            f"{table.path}:1: no column {name!r} for the {role}; columns: {', '.join(table.header)}"
        )
    return lowered.index(str(name).lower())


def cell(table: Table, lineno: int, fields: list[Any], index: int, role: str) -> Any:
    """One field of a row; a short row or a missing JSON key is an error naming the line and column."""
    if index >= len(fields) or fields[index] is _MISSING:
        what = table.header[index] if table.header and index < len(table.header) else f"#{index}"
        raise DataFormatError(
            f"{table.path}:{lineno}: missing column {what} ({role}); the row has {len(fields)} fields"
            if table.format != "jsonl"
            else f"{table.path}:{lineno}: missing key {what!r} ({role})"
        )
    return fields[index]
