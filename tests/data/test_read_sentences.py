"""The one "read sentences, skip blanks" reader, against Python's own line splitting."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentcl.data.readers import DataFormatError, read_lines, read_sentences
from sentcl.index.mining import read_corpus_file
from sentcl.index.search import read_sentences as search_sentences

TEXT = "  first one \n\n\t\nsecond\r\n   \nthird\n"


def test_line_numbers_texts_and_blank_count(tmp_path: Path) -> None:
    path = tmp_path / "s.txt"
    path.write_bytes(TEXT.encode("utf-8"))
    expected = [(n, t.strip()) for n, t in enumerate(TEXT.splitlines(), start=1) if t.strip()]
    found = read_sentences(path)
    assert list(zip(found.linenos, found.texts, strict=True)) == expected
    assert found.blank_lines == len(TEXT.splitlines()) - len(expected) == 3
    assert read_sentences(path, max_examples=2).texts == ["first one", "second"]
    # the three callers agree with it
    assert read_lines(path).examples == found.texts and read_lines(path).skipped == {"empty_lines": 3}
    assert search_sentences(path, "corpus") == (found.linenos, found.texts)
    assert read_corpus_file(path) == found.texts


def test_errors_name_the_file(tmp_path: Path) -> None:
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n", encoding="utf-8")
    assert read_sentences(blank).texts == []
    with pytest.raises(DataFormatError, match=r"corpus file .*blank\.txt has no non-blank line"):
        read_sentences(blank, "corpus file", require_one=True)
    with pytest.raises(FileNotFoundError, match=r"query file .*nope\.txt does not exist"):
        read_sentences(tmp_path / "nope.txt", "query file")
    with pytest.raises(DataFormatError, match="is a directory, not a file"):
        read_sentences(tmp_path, "corpus file")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\n\xff\n")
    with pytest.raises(DataFormatError, match=r"bad\.txt:2: line is not valid UTF-8"):
        read_sentences(bad)
