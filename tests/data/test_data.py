"""Readers and samplers: counts of skipped lines, errors with file and line, batch orders."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from sentcl.data.collate import flatten_views
from sentcl.data.readers import DataFormatError, read_lines
from sentcl.data.sampler import batches, batches_without_duplicates, epoch_permutation


def test_empty_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_text("first\n\n  \nsecond\r\nthird\n\n", encoding="utf-8")
    corpus = read_lines(path)
    assert corpus.examples == ["first", "second", "third"]
    assert corpus.skipped == {"empty_lines": 3}
    assert read_lines(path, max_examples=2).examples == ["first", "second"]


def test_invalid_utf8_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_bytes(b"ok line\nanother\nbad \xff\xfe here\n")
    with pytest.raises(DataFormatError, match=rf"{path}:3: line is not valid UTF-8"):
        read_lines(path)


def test_permutation_is_seeded_per_epoch() -> None:
    assert epoch_permutation(50, 1, 0) == epoch_permutation(50, 1, 0)
    assert epoch_permutation(50, 1, 0) != epoch_permutation(50, 1, 1)
    assert sorted(epoch_permutation(50, 1, 3)) == list(range(50))


def test_batches_keep_every_example() -> None:
    out = batches(list(range(10)), 4)
    assert out == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_no_duplicates_in_a_batch() -> None:
    keys = ["a", "b", "a", "c", "a", "d", "b", "e", "f", "g"]
    order = list(range(len(keys)))
    out = batches_without_duplicates(order, keys, 3)
    assert sorted(i for b in out for i in b) == order  # every example exactly once
    for batch in out:
        counts = Counter(keys[i] for i in batch)
        assert max(counts.values()) == 1, batch
        assert len(batch) <= 3


def test_flatten_views_is_example_major() -> None:
    assert flatten_views([("a", "a'"), ("b", "b'")]) == ["a", "a'", "b", "b'"]
    with pytest.raises(ValueError, match="different numbers of views"):
        flatten_views([("a", "a'"), ("b",)])
