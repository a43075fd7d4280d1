"""Readers of training text. Errors name the file and line; skipped lines are counted, never lost silently."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sentcl.pathcheck import check_input_file

logger = logging.getLogger(__name__)


class DataFormatError(ValueError):
    """A data file has a malformed line; the message names file and line."""


@dataclass
class Corpus:
    """Training examples read from a file (sentences, or tuples of them), with counts of what was skipped."""

    path: Path
    examples: list[Any]
    skipped: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.examples)

    def token_cache(self, tokenizer: Any, max_length: int) -> Any:
        """Cached token ids of every example (``token_ids(i)``), or None: the examples are tokenised per
        batch. A streaming corpus overrides it (sentcl.data.streaming)."""
        return None


def decode_line(raw: bytes, path: Path, lineno: int) -> str:
    """UTF-8 text of one raw line; invalid bytes are a DataFormatError naming file, line and byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataFormatError(
            f"{path}:{lineno}: line is not valid UTF-8 (byte {err.start}: {raw[err.start : err.start + 4]!r})"
        ) from None


def require_file(path: Path, what: str = "training file") -> None:
    """A clear error unless ``path`` is a readable regular file: FileNotFoundError when it is missing, else a
    DataFormatError saying what it is (a directory, a FIFO, a symbolic link loop, unreadable: see
    ``sentcl.pathcheck``); a FIFO is never opened, so nothing blocks."""
    check_input_file(path, what, DataFormatError)


def iter_text_lines(path: Path, what: str = "file") -> Iterator[tuple[int, str]]:
    """(line number, text without newline) for each line; non-UTF-8 bytes are an error naming the line.
    The path is checked first (``require_file``), so a FIFO or a link loop is an error, not a hang."""
    require_file(Path(path), what)
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            yield lineno, decode_line(raw, path, lineno).rstrip("\r\n")


@dataclass(frozen=True)
class Sentences:
    """The non-blank lines of a one-sentence-a-line file, stripped, with their line numbers."""

    path: Path
    linenos: list[int]
    texts: list[str]
    blank_lines: int  # blank (whitespace-only) lines skipped (up to max_examples, where one was given)


def read_sentences(
    path: str | Path, what: str = "training file", max_examples: int | None = None, require_one: bool = False
) -> Sentences:
    """One sentence a line, stripped; blank lines are skipped and counted (the caller reports them).

    ``what`` names the file in errors (missing, a directory, not UTF-8 at line N); ``require_one``: a file
    with no non-blank line is a DataFormatError.
    """
    path = Path(path)
    require_file(path, what)
    linenos: list[int] = []
    texts: list[str] = []
    blank = 0
    for lineno, text in iter_text_lines(path):
        if not text.strip():
            blank += 1
            continue
        linenos.append(lineno)
        texts.append(text.strip())
        if max_examples is not None and len(texts) >= max_examples:
            break
    if require_one and not texts:
        raise DataFormatError(f"{what} {path} has no non-blank line")
    return Sentences(path, linenos, texts, blank)


def read_lines(path: str | Path, max_examples: int | None = None) -> Corpus:
    """One sentence a line; blank lines are skipped and counted."""
    found = read_sentences(path, max_examples=max_examples)
    if found.blank_lines:
        logger.info("%s: skipped %d empty lines", found.path, found.blank_lines)
    return Corpus(found.path, found.texts, {"empty_lines": found.blank_lines})
