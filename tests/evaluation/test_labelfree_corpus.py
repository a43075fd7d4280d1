"""The unlabelled file: streaming reservoir sample under a seed, duplicates, and bad input in one clear line."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import pytest

from sentcl.evaluation.labelfree.corpus import MIN_SENTENCES, read_unlabelled
from sentcl.files.read import DataFormatError


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def algorithm_r(lines: list[str], size: int, seed: int) -> list[str]:
    """Vitter's Algorithm R as the textbook writes it, keeping (line number, text)."""
    rng = random.Random(seed)
    kept: list[tuple[int, str]] = []
    seen = 0
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        seen += 1
        if len(kept) < size:
            kept.append((number, text))
        elif (j := rng.randrange(seen)) < size:
            kept[j] = (number, text)
    return [text for _, text in sorted(kept)]


def test_a_small_file_is_read_whole_without_blank_lines(tmp_path: Path) -> None:
    lines = [f"sentence number {i}" for i in range(30)]
    text = read_unlabelled(write(tmp_path / "u.txt", lines[:10] + ["", "   "] + lines[10:]))
    assert text.sentences == lines
    assert (text.lines, text.nonblank, text.sampled) == (32, 30, False)
    assert "30 distinct sentences from its 30 non-blank lines" in text.describe()


def test_a_large_file_is_sampled_with_a_fixed_seed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    lines = [f"line {i} of the corpus" for i in range(5000)]
    path = write(tmp_path / "big.txt", lines)
    with caplog.at_level(logging.WARNING):
        first = read_unlabelled(path, max_sentences=100, seed=3)
    assert first.sentences == algorithm_r(lines, 100, 3)  # the textbook's sample, in the file's order
    assert read_unlabelled(path, max_sentences=100, seed=3).sentences == first.sentences
    assert read_unlabelled(path, max_sentences=100, seed=4).sentences != first.sentences
    assert first.sampled and first.sample_size == 100
    assert "holds 5000 non-blank lines: the measures use a seeded sample of 100 (seed 3" in caplog.text
    assert "a seeded sample (seed 3) of 100 of its 5,000 non-blank lines" in first.describe()
    # every line is equally likely: over seeds, the first and last lines are drawn about equally often
    counts = [0, 0]
    for seed in range(200):
        got = set(read_unlabelled(write(tmp_path / "s.txt", lines[:200]), 20, seed).sentences)
        counts[0] += lines[0] in got
        counts[1] += lines[199] in got
    assert 8 <= counts[0] <= 35 and 8 <= counts[1] <= 35  # expected 20 of 200 each


def test_duplicates_are_counted_and_kept_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    lines = [f"distinct {i}" for i in range(20)] * 3
    with caplog.at_level(logging.WARNING):
        text = read_unlabelled(write(tmp_path / "d.txt", lines))
    assert text.sentences == lines[:20]
    assert (
        "40 of the 60 lines read repeat an earlier line; the measures use the 20 distinct sentences"
        in caplog.text
    )


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([], "no sentences (the file is empty or every line is blank)"),
        (["", "  ", ""], "no sentences (the file is empty or every line is blank)"),
        (["only one line"], "1 distinct sentence(s); the label-free measures need at least 11"),
        (["the same"] * 500, "1 distinct sentence(s) (500 lines, all repeats of 1); the label-free measures"),
        ([f"s{i}" for i in range(5)], "5 distinct sentence(s); the label-free measures need at least 11"),
    ],
)
def test_too_little_text_is_one_clear_error(tmp_path: Path, lines: list[str], message: str) -> None:
    path = write(tmp_path / "bad.txt", lines)
    with pytest.raises(ValueError, match=r"^" + str(path).replace(".", r"\.") + ": ") as err:
        read_unlabelled(path)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_line_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin.txt"
    path.write_bytes("".join(f"line {i}\n" for i in range(20)).encode() + b"caf\xe9 au lait\n")
    with pytest.raises(DataFormatError, match=rf"{path}:21: line is not valid UTF-8"):
        read_unlabelled(path)


def test_sample_size_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=f"at least {MIN_SENTENCES}"):
        read_unlabelled(write(tmp_path / "u.txt", ["a"]), max_sentences=5)
    with pytest.raises(FileNotFoundError, match="unlabelled file .*nowhere.txt does not exist"):
        read_unlabelled(tmp_path / "nowhere.txt")
