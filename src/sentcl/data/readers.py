"""Readers of training text. Errors name the file and line; skipped lines are counted, never lost silently."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sentcl.files.pathcheck import check_input_file
from sentcl.files.read import DataFormatError, decode_line, iter_text_lines  # noqa: F401  (their home: files)

logger = logging.getLogger(__name__)


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


def require_file(path: Path, what: str = "training file") -> None:
    """A clear error unless ``path`` is a readable regular file: FileNotFoundError when it is missing, else a
    DataFormatError saying what it is (a directory, a FIFO, a symbolic link loop, unreadable: see
    ``sentcl.files.pathcheck``); a FIFO is never opened, so nothing blocks."""
    check_input_file(path, what, DataFormatError)


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
