"""The one rendering of user text for a terminal: control characters made visible, never obeyed.

Corpus lines, queries, hits, file names and request texts come from anyone (a scraped page, someone else's
index). Written raw to a terminal, an escape sequence in them can retitle the window (OSC 0), clear the screen
(``ESC[2J``), recolour the rest of the output, or set the clipboard (OSC 52); a bidirectional override makes a
line read otherwise than it is. Everything sentcl prints for a person, the tables of ``search``, error lines and
log lines (``serve``'s included), goes through :func:`shown`: each such character is written as its escape,
``\\u001b``, ``\\u0007``, ``\\u202e``, as JSON writes it (so a JSON document printed stays the same JSON),
and the text is otherwise unchanged.

Shown escaped: the C0 controls and DEL and the C1 controls (Unicode category Cc; CSI is ``\\x9b`` as a
single character), the bidirectional embeddings, overrides and isolates, and the line and paragraph separators.
A log line keeps its line breaks and tabs (a traceback is many lines); a table cell keeps none.
"""

from __future__ import annotations

import logging
import re

#: U+200E/U+200F marks, U+202A-U+202E embeddings and overrides, U+2066-U+2069 isolates, U+2028/U+2029 breaks
_FORMAT_SHOWN = "\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CELL = re.compile(f"[\x00-\x1f\x7f-\x9f{_FORMAT_SHOWN}]")
_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_FORMAT_SHOWN}]")  # a log line: \t and \n kept


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"  # JSON's escape: a JSON document printed stays JSON, the same text


def shown(text: object, *, lines: bool = False) -> str:
    """``str(text)`` with every control character written as its escape (see the module doc); ``lines`` keeps
    line breaks and tabs (a multi-line log record), otherwise they are escaped too (one table cell, one line)."""
    return (_LINES if lines else _CELL).sub(_escape, str(text))


class ShownFormatter(logging.Formatter):
    """A log formatter whose lines go through :func:`shown` (line breaks kept): a logged path, query or
    exception message cannot drive the terminal the log is read on."""

    def format(self, record: logging.LogRecord) -> str:
        return shown(super().format(record), lines=True)
