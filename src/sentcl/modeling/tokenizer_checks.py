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
- ``quiet_rust_panics``: a pattern the check cannot see can still make the tokenizer panic; every tokenizer call
  runs inside it, so Rust's own report of the panic never reaches the terminal before sentcl's one line.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
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


# ---------------------------------------------------------------- a Rust panic's own report, kept off the terminal

#: the report Rust's panic hook writes on file descriptor 2: "thread 'NAME' (ID) panicked at FILE:LINE:COL:",
#: the message, a backtrace where RUST_BACKTRACE asks for one, and a closing "note: ..." line
_PANIC_START = re.compile(rb"^thread '[^']*'(?: \(\d+\))? panicked at ", re.M)
_PANIC_END = re.compile(rb"^note: .*$\n?", re.M)
_redirect = threading.Lock()
_held: list[Any] = []  # [saved descriptor 2, capture file] while a tokenizer call runs; depth in _depth
_depth = [0]


def without_panic_reports(data: bytes) -> bytes:
    """``data`` less every Rust panic report in it (the exception that follows says it in one line)."""
    while (start := _PANIC_START.search(data)) is not None:
        end = _PANIC_END.search(data, start.end())
        head = data[: start.start()]
        head = head[:-1] if head.endswith(b"\n\n") or head == b"\n" else head  # the report's own blank line
        data = head + (data[end.end() :] if end else b"")
    return data


def _redirect_stderr() -> list[Any]:
    """Descriptor 2 sent to a fresh temporary file: [the saved descriptor, the file]; [] where descriptor 2 is
    closed or cannot be copied (nothing is redirected then)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        return []
    capture = tempfile.TemporaryFile()  # noqa: SIM115 - closed when the outermost call restores descriptor 2
    os.dup2(capture.fileno(), 2)
    return [saved, capture]


@contextmanager
def quiet_rust_panics() -> Iterator[None]:
    """Run a tokenizer call with file descriptor 2 sent to a file, then write back what it received less any
    Rust panic report: the PanicException that follows is the user's one line (``sentcl.cli``), or one request's
    error in the service. Nested and concurrent calls share one redirection (the outermost restores it)."""
    with _redirect:
        if _depth[0] == 0:
            _held[:] = _redirect_stderr()
        _depth[0] += 1
    try:
        yield
    finally:
        with _redirect:
            _depth[0] -= 1
            if _depth[0] == 0 and _held:
                saved, capture = _held
                os.dup2(saved, 2)
                os.close(saved)
                capture.seek(0)
                data = without_panic_reports(capture.read())
                capture.close()
                _held.clear()
                while data:
                    data = data[os.write(2, data) :]
