"""JSON, JSON Lines and YAML files, one mechanism each: readers whose errors name the file and the problem, and
the strict JSON writer.

``read_json`` reads a whole-file JSON value (sentcl.json, an index's settings, a shard manifest, ...): a missing
file, bytes that are not UTF-8, text that is not JSON (line and column given) or a top level of the wrong kind
is an error naming the file. ``write_json_strict`` writes a result dict atomically (``sentcl.atomic``) as strict
JSON: NaN and infinities (a collapsed model's correlation) become null, numpy scalars plain numbers.
``load_npy`` reads a .npy array (an index's embeddings, a shard), memory-mapped by default, naming a missing,
empty, truncated or corrupt file. ``iter_text_lines`` reads the lines of any text file (bytes that are not UTF-8 are a ``DataFormatError`` naming
the file and line); ``iter_jsonl`` / ``parse_json_line`` read JSON Lines, one value a line, with ``path:line`` errors; ``read_yaml``
a recipe or grid file (a missing file or bad YAML names the file).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from sentcl.atomic import atomic_write_json
from sentcl.pathcheck import check_input_file

_KINDS = {dict: "a JSON object", list: "a JSON list", str: "a JSON string"}


class DataFormatError(ValueError):
    """A data file has a malformed line; the message names file and line."""


def decode_line(raw: bytes, path: Path, lineno: int) -> str:
    """UTF-8 text of one raw line; invalid bytes are a DataFormatError naming file, line and byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataFormatError(
            f"{path}:{lineno}: line is not valid UTF-8 (byte {err.start}: {raw[err.start : err.start + 4]!r})"
        ) from None


def iter_text_lines(path: Path, what: str = "file") -> Iterator[tuple[int, str]]:
    """(line number, text without newline) for each line; non-UTF-8 bytes are an error naming the line.
    The path is checked first, so a FIFO or a link loop is an error, not a hang."""
    check_input_file(Path(path), what, DataFormatError)
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            yield lineno, decode_line(raw, path, lineno).rstrip("\r\n")


def read_json(
    path: str | Path, expect: type = dict, what: str = "", error: type[ValueError] = ValueError
) -> Any:
    """The JSON value of ``path``, whose top level must be ``expect`` (dict or list).

    ``what`` says what the file is in the messages ("index settings"); ``error`` is the class raised for a file
    that is there but unusable (e.g. ``ModelFolderError`` for a model folder); a missing one is FileNotFoundError.
    """
    path = Path(path)
    check_input_file(path, what, error)  # missing: FileNotFoundError; a FIFO, a directory, a link loop: error
    subject = f"{what} is " if what else ""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise error(f"{path}: {subject}not UTF-8 text ({err})") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise error(
            f"{path}: {subject}not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})"
        ) from None
    if not isinstance(value, expect):
        kind = _KINDS.get(expect, expect.__name__)
        raise error(
            f"{path}: {what or 'the file'} must be {kind} at the top level, got {type(value).__name__}"
        )
    return value


def parse_json_line(
    path: Path, lineno: int, text: str, expect: type = dict, error: type[ValueError] = ValueError
) -> Any:
    """One JSONL line's value, which must be ``expect``; anything else is ``error`` naming ``path:lineno``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise error(f"{path}:{lineno}: not valid JSON: {err.msg} (column {err.colno})") from None
    if not isinstance(value, expect):
        raise error(
            f"{path}:{lineno}: expected {_KINDS.get(expect, expect.__name__)}, got {type(value).__name__}"
        )
    return value


def iter_jsonl(
    path: Path, expect: type = dict, error: type[ValueError] = ValueError
) -> Iterator[tuple[int, Any]]:
    """(line number, value) of every non-blank line of a JSONL file; bad UTF-8 or JSON names ``path:lineno``."""
    for lineno, text in iter_text_lines(path):
        if text.strip():
            yield lineno, parse_json_line(path, lineno, text, expect, error)


def read_yaml(path: str | Path, what: str, error: type[ValueError] = ValueError) -> Any:
    """The YAML value of ``path`` (an empty file: {}); a missing file or invalid YAML is an error naming it as
    ``what`` (e.g. "config file"). The caller checks the top level's shape (its message knows the keys)."""
    path = Path(path)
    try:
        check_input_file(path, what, error)  # never opens a FIFO; says what a path that exists is
    except FileNotFoundError as err:
        raise error(str(err)) from None
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise error(f"{what} {path} is not valid YAML: {err}") from err


def json_safe(value: Any) -> Any:
    """nan/inf -> None (strict JSON has no NaN); numpy scalars -> Python numbers; tuples -> lists; keys -> str."""
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_json_strict(path: str | Path, payload: Any) -> Path:
    """``payload`` as strict, indented JSON (``json_safe``), written atomically; parent folders are created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_json(path, json_safe(payload), allow_nan=False)


def load_npy(path: Path, mmap: bool = True) -> np.ndarray:
    """An .npy file (memory-mapped by default); a missing, empty, truncated or corrupt file names itself."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    if path.stat().st_size == 0:
        raise ValueError(f"{path} is empty (0 bytes): not a .npy array; re-create it")
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise ValueError(f"{path} is truncated or not a valid .npy array ({err}); re-create it") from None
