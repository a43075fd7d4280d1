"""Every reader of a user's text files and of sentcl's JSON artefacts over generated files (hypothesis): random
Unicode (BOM, CR, NUL, U+2028, NEL), random bytes and truncated files. Each reader gives the right answer (a
hand-written split of the bytes) or a known user error (``DataFormatError`` / ``ValueError`` /
``FileNotFoundError``) naming the file, in bounded time; a reader never writes, so nothing of the user's is
lost (each test checks the file's bytes after the read)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sentcl.data.pairs import read_pairs
from sentcl.data.readers import read_sentences
from sentcl.data.scored_pairs import read_scored_pairs
from sentcl.files.artefacts import RUN_RESULTS
from sentcl.files.read import DataFormatError, iter_jsonl, read_typed_json

SETTINGS = settings(
    max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
_pieces = st.sampled_from(
    [
        "a dog",
        " ",
        "\t",
        "\n",
        "\r\n",
        "\r",
        "\x00",
        "\u2028",
        "\x85",
        "\ufeff",
        "é",
        "😀",
        ",",
        "\t0.5",
        '"',
        "{",
    ]
)
_texts = st.lists(_pieces, max_size=40).map("".join)
USER_ERRORS = (DataFormatError, ValueError, FileNotFoundError)


def _sentences_by_hand(data: bytes) -> list[tuple[int, str]] | int:
    """(line number, stripped text) of each non-blank line, or the number of the first line that is not
    UTF-8: lines end at b"\\n" only; a line's trailing CR/LF characters go; a BOM opening line 1 goes."""
    out = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return number
        if number == 1 and text.startswith("\ufeff"):
            text = text[1:]
        text = text.rstrip("\r\n").strip()
        if text:
            out.append((number, text))
    return out


@SETTINGS
@given(data=_texts.map(lambda t: t.encode("utf-8")) | st.binary(max_size=60))
def test_sentence_reader_matches_a_hand_split_or_names_the_line(data: bytes, tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(data)
    want = _sentences_by_hand(data)
    try:
        got = read_sentences(path)
    except DataFormatError as err:
        assert isinstance(want, int) and str(err).startswith(f"{path}:{want}: line is not valid UTF-8")
    else:
        assert list(zip(got.linenos, got.texts, strict=True)) == want
    assert path.read_bytes() == data  # read, never written


@SETTINGS
@given(text=_texts, suffix=st.sampled_from([".tsv", ".csv", ".jsonl"]), cut=st.integers(0, 60))
def test_pair_readers_read_or_name_the_file(text: str, suffix: str, cut: int, tmp_path: Path) -> None:
    path = tmp_path / f"p{suffix}"
    data = text.encode("utf-8")[: cut or None]  # truncated anywhere, even inside a character
    path.write_bytes(data)
    for reader in (read_pairs, read_scored_pairs):
        try:
            corpus = reader(path)
        except USER_ERRORS as err:
            assert str(path) in str(err), (reader.__name__, str(err))
        else:
            assert all(isinstance(x, str | float) for example in corpus.examples for x in example)
    try:
        records = list(iter_jsonl(path))
    except USER_ERRORS as err:
        assert str(path) in str(err)
    else:
        assert all(isinstance(value, dict) for _, value in records)
    assert path.read_bytes() == data


GOOD = {"best_step": 2, "global_step": 2, "results": {"stsb_dev": {"STSBenchmark": {"spearman": 80.0}}}}


@SETTINGS
@given(cut=st.integers(0, len(json.dumps(GOOD))), noise=st.binary(max_size=8), at=st.integers(0, 80))
def test_a_truncated_or_bit_flipped_artefact_is_read_or_named(
    cut: int, noise: bytes, at: int, tmp_path: Path
) -> None:
    path = tmp_path / "results.json"
    data = json.dumps(GOOD).encode()[:cut]
    data = data[:at] + noise + data[at + len(noise) :]
    path.write_bytes(data)
    try:
        value: Any = read_typed_json(path, RUN_RESULTS, "run results")
    except ValueError as err:
        assert str(path) in str(err)
    else:
        assert isinstance(value["results"], dict)


def test_a_bom_opens_no_sentence(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes("\ufeffa dog\r\nthe cat\u2028sits\n".encode())
    got = read_sentences(path)
    assert got.texts == ["a dog", "the cat\u2028sits"]  # U+2028 is inside a line: only \n ends one
    with pytest.raises(DataFormatError, match=r"in\.txt:2: line is not valid UTF-8"):
        path.write_bytes(b"ok\n\xff\n")
        read_sentences(path)
