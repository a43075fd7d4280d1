"""What a model folder's tokenizer must satisfy before any text reaches it, checked where the folder is opened
(the PyTorch loader and the static model alike):

- ``check_vocab_fits``: every id the tokenizer can give (its vocabulary and added tokens) has a row in the
  embedding table; otherwise one text holding such a token fails a forward pass with an index error, and in
  the service every request batched with it.
- ``check_patterns``: the regular expressions of its normalizer and pre-tokenizer (``Split`` and ``Replace``
  with a ``Regex``) hold no nested unbounded repetition (``(a+)+``, ``(x+x+)*``): such a pattern backtracks
  exponentially, and the Rust tokenizer then panics after its retry limit (or holds the thread for seconds).
  ``pattern_sources`` lists the patterns; ``has_patterns`` tells the service to keep such a tokenizer off its
  event loop.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from sentcl.files.paths import ModelFolderError

_UNBOUNDED = "+*"


def tokenizer_json(tokenizer: Any) -> dict[str, Any]:
    """The Rust tokenizer's JSON of a fast tokenizer (a transformers wrapper or a ``tokenizers.Tokenizer``);
    {} for a slow one."""
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    to_str = getattr(backend, "to_str", None)
    return json.loads(to_str()) if to_str is not None else {}


def _walk(node: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        pattern = node.get("pattern")
        if node.get("type") in ("Split", "Replace") and isinstance(pattern, dict) and "Regex" in pattern:
            yield where, str(pattern["Regex"])
        for key in ("normalizers", "pretokenizers"):
            for i, child in enumerate(node.get(key) or []):
                yield from _walk(child, f"{where}[{i}]")


def pattern_sources(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, regex) of every regular expression of the tokenizer JSON's normalizer and pre-tokenizer."""
    return [*_walk(spec.get("normalizer"), "normalizer"), *_walk(spec.get("pre_tokenizer"), "pre_tokenizer")]


def has_patterns(tokenizer: Any) -> bool:
    return bool(pattern_sources(tokenizer_json(tokenizer)))


def nested_repetition(pattern: str) -> bool:
    """Whether ``pattern`` repeats, without bound, a group that itself holds an unbounded repetition (star
    height above one: the shape of catastrophic backtracking). Escapes and character classes are skipped."""
    stack: list[bool] = [False]  # per open group: holds an unbounded repetition
    closed: bool | None = None  # the group just closed held one (None: the last item was no group)
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i, closed = i + 2, None
            continue
        if ch == "[":
            j = i + 1 + (pattern[i + 1 : i + 2] == "^")
            j += pattern[j : j + 1] == "]"
            while j < len(pattern) and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            i, closed = j + 1, None
            continue
        unbounded = ch in _UNBOUNDED or (ch == "{" and pattern[i:].split("}", 1)[0].endswith(","))
        if unbounded:
            if closed:
                return True
            stack[-1] = True
        if ch == "(":
            stack.append(False)
            closed = None
        elif ch == ")" and len(stack) > 1:
            inner = stack.pop()
            stack[-1] = stack[-1] or inner
            closed = inner
        elif not unbounded and ch not in "?":
            closed = None
        i += 1
    return False


def check_patterns(tokenizer: Any, source: str) -> None:
    """ModelFolderError naming the tokenizer's pattern that repeats a repetition (``nested_repetition``)."""
    for where, pattern in pattern_sources(tokenizer_json(tokenizer)):
        if nested_repetition(pattern):
            raise ModelFolderError(
                f"{source}: tokenizer.json's {where} regex {pattern!r} repeats a repetition (catastrophic "
                "backtracking: the tokenizer would stall or fail on some texts); refused"
            )


def check_vocab_fits(tokenizer: Any, rows: int, source: str) -> None:
    """ModelFolderError when the tokenizer can give an id without a row in the ``rows``-row embedding table."""
    size = len(tokenizer)
    if size > rows:
        raise ModelFolderError(
            f"{source}: the tokenizer has {size} tokens (vocabulary and added tokens) but the word embeddings "
            f"hold {rows} rows: ids {rows}..{size - 1} have no vector; resize the embeddings or drop the tokens"
        )
