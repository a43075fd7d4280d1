"""Readers by name: a method says which reader yields its examples (``Method.reader``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sentcl.data.readers import Corpus, read_lines
from sentcl.registry import Registry

Reader = Callable[[Path, int | None], Corpus]
READERS: Registry[Corpus] = Registry("reader")
READERS.register("lines")(read_lines)


def read_training_data(reader: str, path: Path, max_examples: int | None = None) -> Corpus:
    return READERS.get(reader)(path, max_examples)
