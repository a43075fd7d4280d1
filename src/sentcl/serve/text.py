"""What the service does to a request's text before tokenising it: refuse what is not text (a lone surrogate,
an input with nothing visible in it, token ids outside the vocabulary), and bound the characters any one
input may make the tokeniser read.

The character budget (``sentcl.files.budget``, the one every reader and tokenizer call of sentcl uses). A token is made from at least one character, but characters can make no token
(spaces, zero-width and control characters, accents the normaliser strips) and one token can stand for many
characters (a word over 100 characters is one ``[UNK]`` in WordPiece). So no number of characters is
*guaranteed* to hold the first ``max_length`` tokens, and the full text cannot be tokenised either: a tokeniser
reads the whole string before it truncates, and six 1.9 MB inputs held the service's one tokenising thread for
30 s. The service therefore reads at most ``CHARS_PER_TOKEN * max_length`` characters of each input
(4,096 for a 256-token model; the special tokens only lower the tokens needed). On the first 20,000 lines of
the Wikipedia corpus, all-MiniLM-L6-v2's tokeniser spends 4.6 characters per token on average, 7.5 at most on
one line and 5.9 at most over any 254-token window, so 16 leaves a margin of two. The cut falls on the last
whitespace in the budget's second half (so the last word is not split), else at the budget. A longer input
keeps its first ``max_length`` words (``keep_for_tokens``), so ``truncate`` gives exactly the full text's
truncation with whitespace runs and very long words too. Without ``truncate``, an input over that is refused
as too long.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

from sentcl.files.budget import CHARS_PER_TOKEN, char_budget, cut, keep_for_tokens  # noqa: F401 - one budget
from sentcl.serve.limits import ServiceError

COUNT_CHUNK_CHARS = 32_768  # characters tokenised per call of the counting thread, so requests interleave
# a group of at most this many characters is tokenised on the event loop itself (under a millisecond here):
# for requests this small the hand-off to the counting thread and back cost the service more CPU than it saved
INLINE_COUNT_CHARS = 2_048

# characters that show nothing: Unicode's spaces, controls and formats (Zs, Zl, Zp, Cc, Cf: U+200B, U+FEFF,
# U+2060, ...), plus the Default_Ignorable_Code_Point ranges outside those categories and the blank pattern
# of braille (U+2800)
BLANK_CATEGORIES = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf"})
INVISIBLE_RANGES = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong/jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian free variation selectors
    (0x2800, 0x2800),  # braille pattern blank
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xE0000, 0xE0FFF),  # tags and variation selectors supplement
)


def is_blank_char(ch: str) -> bool:
    if ch.isspace() or unicodedata.category(ch) in BLANK_CATEGORIES:
        return True
    code = ord(ch)
    return any(lo <= code <= hi for lo, hi in INVISIBLE_RANGES)


def check_unicode(texts: list[str]) -> None:
    """400 for the first input that is not valid Unicode: a lone surrogate (a JSON \\ud83d without its low
    half). The UTF-8 encoder finds it at C speed, so a 2 MB input costs no time on the event loop."""
    for i, text in enumerate(texts):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:
            raise ServiceError(
                400,
                "invalid_text",
                f"input {i} holds a lone surrogate (U+{ord(text[err.start]):04X} at character {err.start}): "
                "not valid Unicode; send UTF-8 text (a JSON \\ud83d escape needs its low half)",
            ) from None


def check_blank(texts: list[str]) -> None:
    """400 for the first input that shows nothing (run on inputs already within the character budget)."""
    blank = [i for i, text in enumerate(texts) if all(map(is_blank_char, text))]
    if blank:
        raise ServiceError(
            400,
            "empty",
            f"input {blank[0]} is empty or holds only spaces or invisible characters"
            f" ({len(blank)} such input(s))",
        )


def check_token_ids(ids: list[list[int]], limit: int, vocab: int, truncating: bool) -> list[list[int]]:
    """Token-id inputs within ``limit`` ids (the model's length less the special tokens its tokenizer adds:
    422 over it unless ``truncating``) whose kept ids are all in
    ``range(vocab)`` (400 naming the input and the id); ids past the limit are dropped, not looked at."""
    long = next((i for i, row in enumerate(ids) if len(row) > limit), None)
    if long is not None and not truncating:
        raise ServiceError(
            422,
            "input_too_long",
            f"input {long} has {len(ids[long])} token ids; the model takes {limit} besides its special tokens"
            f' (send "truncate": true to keep the first {limit})',
        )
    kept = [row[:limit] for row in ids]
    for i, row in enumerate(kept):
        bad = next((t for t in row if not 0 <= t < vocab), None)
        if bad is not None:
            raise ServiceError(
                400,
                "invalid_token_id",
                f"input {i} holds token id {bad}, outside the model's vocabulary of {vocab} ids: token ids "
                "must come from the served model's tokenizer (a client tokenising with another one, such "
                "as tiktoken, should send text)",
            )
    return kept


def chunks(texts: list[str], max_chars: int = COUNT_CHUNK_CHARS) -> Iterator[list[str]]:
    """Consecutive groups of ``texts`` of at most ``max_chars`` characters (a longer text alone)."""
    group: list[str] = []
    size = 0
    for text in texts:
        if group and size + len(text) > max_chars:
            yield group
            group, size = [], 0
        group.append(text)
        size += len(text)
    if group:
        yield group
