"""User text printed for a person never drives the terminal (``sentcl.files.shown``): a corpus line, a query,
a logged path or an error's text shows its control characters escaped, in every command's output, its error
line and its log lines; text without them is printed unchanged."""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sentcl.cli import main
from sentcl.files.shown import ShownFormatter, shown

ESCAPES = "\x1b]0;PWNED-TITLE\x07\x1b[2J\x1b[31mred text about cats\x1b[0m \x9b31m \u202eevil"
BIDI = set("\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def obeyed(text: str, keep: str = "") -> list[str]:
    """The characters of ``text`` a terminal would act on (an independent reading: Unicode categories)."""
    return [c for c in text if (unicodedata.category(c) == "Cc" or c in BIDI) and c not in keep]


def read_back(text: str) -> str:
    return re.sub(r"\\u([0-9a-f]{4})", lambda m: chr(int(m[1], 16)), text)


@given(st.text())
def test_shown_leaves_nothing_a_terminal_obeys_and_reads_back(text: str) -> None:
    cell, lines = shown(text), shown(text, lines=True)
    assert not obeyed(cell)
    assert not obeyed(lines, keep="\n\t")
    if "\\" not in text:  # each escape reads back as the character it stands for
        assert read_back(cell) == text and read_back(lines) == text
    if not obeyed(text):  # printable text is untouched
        assert cell == text and lines == text


def test_each_escape_is_written_as_json_writes_it() -> None:
    assert shown("a\x1b[2Jb\x07\u202ec\td\ne") == "a\\u001b[2Jb\\u0007\\u202ec\\u0009d\\u000ae"
    assert shown("a\x1b[2Jb\td\ne", lines=True) == "a\\u001b[2Jb\td\ne"


def test_log_lines_escape_the_message_and_keep_their_lines() -> None:
    record = logging.LogRecord(
        "sentcl", logging.WARNING, __file__, 1, "reading %s", ("x\x1b]52;c;AAA\x07",), None
    )
    line = ShownFormatter("%(levelname)s %(name)s: %(message)s").format(record)
    assert line == "WARNING sentcl: reading x\\u001b]52;c;AAA\\u0007"


def test_search_prints_a_corpus_s_escape_sequences_escaped(
    tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "esc.txt"
    corpus.write_text(f"a normal sentence about cats\n{ESCAPES}\n", encoding="utf-8")
    assert (
        main(
            [
                "search",
                "--model",
                str(tiny_bert),
                "--corpus",
                str(corpus),
                "--query",
                "cats\x1b[5m",
                "-k",
                "2",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert not obeyed(out, keep="\n"), out
    assert (
        "\\u001b]0;PWNED-TITLE\\u0007\\u001b[2J" in out
        and "\\u202eevil" in out
        and "query: cats\\u001b[5m" in out
    )
    # --json writes the same text, escaped by JSON, and reads back whole
    assert (
        main(
            [
                "search",
                "--model",
                str(tiny_bert),
                "--corpus",
                str(corpus),
                "--query",
                "cats",
                "-k",
                "2",
                "--json",
            ]
        )
        == 0
    )
    texts = {h["text"] for h in json.loads(capsys.readouterr().out)[0]["hits"]}
    assert ESCAPES in texts


def test_an_error_line_shows_the_escapes_of_the_user_s_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no\x1b[2Jsuch.txt"
    assert main(["search", "--model", "all-MiniLM-L6-v2", "--corpus", str(missing), "--query", "q"]) == 2
    err = capsys.readouterr().err
    assert "no\\u001b[2Jsuch.txt" in err and not obeyed(err, keep="\n")
