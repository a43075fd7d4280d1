"""sentcl's one input budget: how many characters of one input any reader keeps and any tokenizer reads, on
the command line, in the library and in the service alike.

A tokenizer reads its whole input before it truncates: one 44 MB line took 6.8 GB and 65 s to encode, and
the Rust tokenizer aborted under a 4 GB memory limit. So two bounds apply to every text:

- **before tokenising** (``bounded_texts``, ``keep_for_tokens``): a text of at most ``char_budget(max_length)``
  = ``CHARS_PER_TOKEN`` x ``max_length`` characters (4,096 for a 256-token model) reaches the tokenizer whole.
  A longer one is cut after its first ``max_length`` words (runs of non-space characters): every word the
  normaliser keeps gives at least one token, so the kept text holds the first ``max_length`` tokens and the
  truncation is the one the full text gets, however much whitespace pads it (5,000 spaces then a sentence
  keep the sentence) and however long its words are. Whitespace and words cost the tokenizer little, but
  the visible characters kept are bounded too: ``WORD_CHARS`` per token (WordPiece reads a word of over 100
  characters as one ``[UNK]``), and nothing past ``LINE_CHARS``. A word counts only when it holds a letter,
  digit, punctuation mark or symbol (Unicode categories L, N, P, S): a word made only of characters a
  normaliser drops (zero-width and other format or control characters, lone combining accents, private-use or
  unassigned code points) gives no token, so it is kept but not counted;
- **while reading a file** (``bounded_lines``): a line is read ``LINE_BYTES`` bytes at most; the rest of a
  longer line is skipped unread into memory, and the reader names the file and counts the cut lines in a
  warning. ``LINE_CHARS`` is the budget of the longest model sentcl prepares text for (``MAX_TOKENS``), so no
  cut removes what a model would read.

The cut (``cut``) falls on the last whitespace in the budget's second half, so the last word is not split.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 16  # characters read per token of the model's max length (see the module's docstring)
MAX_TOKENS = 8192  # the longest max_length the line readers keep text for
LINE_CHARS = CHARS_PER_TOKEN * MAX_TOKENS  # characters of one line a reader keeps (131,072)
LINE_BYTES = 4 * LINE_CHARS  # bytes read of one line (UTF-8 spends at most 4 bytes a character)
_SKIP_CHUNK = 1 << 20  # bytes skipped at a time past a line's budget
WORD_CHARS = (
    101  # visible characters kept per token: WordPiece reads a word of over 100 characters as one token
)
_WORD = re.compile(r"\S+")


def char_budget(max_length: int) -> int:
    """Characters of one input read for a model of ``max_length`` tokens."""
    return CHARS_PER_TOKEN * max_length


def cut(text: str, budget: int) -> str:
    """``text`` within ``budget`` characters, cut at the last whitespace of the budget's second half."""
    if len(text) <= budget:
        return text
    head = text[:budget]
    if text[budget].isspace():
        return head
    space = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    return head[:space] if space >= budget // 2 else head


def keep_for_tokens(text: str, max_length: int) -> str:
    """``text`` whole when it is at most ``char_budget(max_length)`` characters; else its shortest prefix that
    ends a word and holds ``max_length`` words (or ``WORD_CHARS * max_length`` visible characters), at most
    ``LINE_CHARS`` characters: it holds the first ``max_length`` tokens of the whole text (module doc)."""
    if len(text) <= char_budget(max_length):
        return text
    visible = 0
    words = 0
    limit = WORD_CHARS * max_length
    for match in _WORD.finditer(text, 0, LINE_CHARS):
        if not gives_token(match.group()):
            continue
        words += 1
        visible += match.end() - match.start()
        if words >= max_length or visible >= limit:
            # a word cut by the visible budget keeps over 100 characters, so it stays the one token it was
            return text[
                : max(match.end() - max(0, visible - limit), min(match.end(), match.start() + WORD_CHARS))
            ]
    return text[:LINE_CHARS]


def gives_token(word: str) -> bool:
    """Whether ``word`` holds a character every tokenizer keeps: a letter, digit, punctuation mark or symbol
    (Unicode categories L, N, P, S); format and control characters, combining marks alone, private-use and
    unassigned code points are dropped by BERT's normaliser, and may give no token."""
    return any(unicodedata.category(ch)[0] in "LNPS" for ch in word)


def bounded_texts(texts: Sequence[str], max_length: int | None) -> list[str]:
    """``texts`` each cut by ``keep_for_tokens`` (``LINE_CHARS`` characters without a length), as every
    tokenizer call of sentcl gets them; the count of cut texts is logged at debug level (the cut changes no
    token the model reads)."""
    if max_length:
        out = [keep_for_tokens(t, max_length) for t in texts]
    else:
        out = [cut(t, LINE_CHARS) if len(t) > LINE_CHARS else t for t in texts]
    over = sum(len(a) != len(b) for a, b in zip(out, texts, strict=True))
    budget = char_budget(max_length) if max_length else LINE_CHARS
    if over:
        logger.debug("%d input(s) over %d characters cut before tokenising", over, budget)
    return out


def read_bounded_line(handle: BinaryIO) -> tuple[bytes, int, bool]:
    """(the next line of ``handle``, whole when its text is at most ``LINE_BYTES`` bytes, else its first
    ``LINE_BYTES`` bytes back to a character's start plus b"\\n"; the bytes it spans in the file, its end
    included; whether it was cut); (b"", 0, False) at the end of the file. Memory: ``LINE_BYTES``, however long
    the line."""
    raw = handle.readline(LINE_BYTES + 1)
    if len(raw) <= LINE_BYTES or raw.endswith(b"\n"):
        return raw, len(raw), False
    used = len(raw)
    while True:  # skip the rest of the line without holding it
        more = handle.readline(_SKIP_CHUNK)
        used += len(more)
        if not more or more.endswith(b"\n"):
            break
    keep = LINE_BYTES
    while (
        keep > 0 and (raw[keep] & 0xC0) == 0x80
    ):  # the first byte dropped continues a character: keep it whole
        keep -= 1
    return raw[:keep] + b"\n", used, True


class LineCuts:
    """The lines of one file cut to the budget: counted, and said once in a warning naming the file."""

    def __init__(self, path: Path | str) -> None:
        self.path = path
        self.lines: list[int] = []

    def add(self, lineno: int) -> None:
        self.lines.append(lineno)

    def report(self) -> None:
        if self.lines:
            first = ", ".join(str(n) for n in self.lines[:5]) + (", ..." if len(self.lines) > 5 else "")
            logger.warning(
                "%s: %d line(s) over %s characters were cut to them (line %s): no model reads past %s tokens",
                self.path,
                len(self.lines),
                f"{LINE_CHARS:,}",
                first,
                f"{MAX_TOKENS:,}",
            )


def bounded_lines(
    handle: BinaryIO, path: Path | str, refuse: type[ValueError] | None = None
) -> Iterator[tuple[int, bytes, int]]:
    """(line number, the line's bytes within ``LINE_BYTES``, the bytes it spans in the file) of each line of
    ``handle``; a longer line is cut (``read_bounded_line``), and the cut lines are reported in one warning
    naming ``path`` when the file ends. ``refuse``: a longer line is this error naming ``path:line`` instead
    (a table's row, whose last field a cut would change)."""
    cuts = LineCuts(path)
    lineno = 1
    while True:
        raw, used, was_cut = read_bounded_line(handle)
        if not used:
            break
        if was_cut and refuse is not None:
            raise refuse(
                f"{path}:{lineno}: the line is over {LINE_CHARS:,} characters ({used:,} bytes), more than any "
                "row of a table holds; refused rather than cut"
            )
        if was_cut:
            cuts.add(lineno)
        yield lineno, raw, used
        lineno += 1
    cuts.report()
