"""Ordered text: document boundaries, next-sentence views and Quick-Thoughts' contiguous batches."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from sentcl.data.ordered import (
    NextSentenceExample,
    NextSentenceViews,
    OrderedSentence,
    contiguous_batches,
    read_next_sentence,
    read_ordered_lines,
)
from sentcl.data.readers import DataFormatError
from sentcl.data.sources import read_training_data

# three documents: a0..a4, b0 (a one-sentence document), c0..c2; blank runs and leading blanks are one boundary
TEXT = "\n  \na0\na1\na2\na3\na4\n\n\nb0\n\nc0 \nc1\nc2\n\n"
DOCS = [["a0", "a1", "a2", "a3", "a4"], ["b0"], ["c0", "c1", "c2"]]


@pytest.fixture()
def ordered_file(tmp_path: Path) -> Path:
    path = tmp_path / "ordered.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


def test_blank_lines_split_documents(ordered_file: Path) -> None:
    corpus = read_training_data("ordered_lines", ordered_file)
    expected = [OrderedSentence(t, d, p) for d, doc in enumerate(DOCS) for p, t in enumerate(doc)]
    assert corpus.examples == expected
    assert corpus.skipped == {"empty_lines": TEXT.count("\n") - len(expected)}
    assert read_ordered_lines(ordered_file, max_examples=6).examples == expected[:6]


def test_next_sentence_reader_drops_and_counts_document_ends(ordered_file: Path) -> None:
    corpus = read_training_data("next_sentence", ordered_file)
    assert [e.sentence.text for e in corpus.examples] == ["a0", "a1", "a2", "a3", "c0", "c1"]
    assert [e.text for e in corpus.examples] == ["a0", "a1", "a2", "a3", "c0", "c1"]
    assert corpus.skipped["no_next_sentence"] == 3  # a4, b0, c2: one per document
    # successors: the next up-to-3 sentences of the same document, read off DOCS by hand
    for example in corpus.examples:
        doc = DOCS[example.sentence.doc_id]
        assert example.successors == tuple(doc[example.sentence.position + 1 : example.sentence.position + 4])
    assert [e.sentence.text for e in read_next_sentence(ordered_file, 5).examples] == [
        "a0",
        "a1",
        "a2",
        "a3",
        "c0",
    ]


def test_window_one_picks_exactly_the_next_sentence(ordered_file: Path) -> None:
    corpus = read_next_sentence(ordered_file)
    views = NextSentenceViews(window=1, seed=3)
    lines = [line.strip() for line in TEXT.splitlines()]
    for example in corpus.examples:
        anchor, partner = views(example)
        assert anchor == example.sentence.text
        assert partner == lines[lines.index(anchor) + 1]  # the next line of the file, by hand


def test_window_three_stays_within_three_and_the_document(ordered_file: Path) -> None:
    corpus = read_next_sentence(ordered_file)
    seen: dict[str, set[str]] = {}
    for seed in range(30):
        views = NextSentenceViews(window=3, seed=seed)
        for epoch in range(2):
            views.set_epoch(epoch)
            for example in corpus.examples:
                anchor, partner = views(example)
                d, p = example.sentence.doc_id, example.sentence.position
                assert partner in DOCS[d][p + 1 : p + 4]
                seen.setdefault(anchor, set()).add(partner)
    # every allowed partner is drawn at some point (60 draws per anchor)
    assert seen["a0"] == {"a1", "a2", "a3"}
    assert seen["a3"] == {"a4"}
    assert seen["c0"] == {"c1", "c2"}


def test_views_are_deterministic_under_seed(ordered_file: Path) -> None:
    examples = read_next_sentence(ordered_file).examples * 20  # repeated calls on the same example agree too

    def draws(seed: int, epoch: int) -> list[tuple[str, str]]:
        views = NextSentenceViews(window=3, seed=seed)
        views.set_epoch(epoch)
        return [views(e) for e in examples]

    assert draws(1, 0) == draws(1, 0)
    assert draws(1, 0) != draws(2, 0)
    assert draws(1, 0) != draws(1, 1)


def test_views_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="window must be in 1..3"):
        NextSentenceViews(window=4)
    lonely = NextSentenceExample(OrderedSentence("x", 0, 0), ())
    with pytest.raises(ValueError, match="has no next sentence"):
        NextSentenceViews(window=1)(lonely)


def test_invalid_utf8_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_bytes(b"one\n\ntwo \xff\n")
    with pytest.raises(DataFormatError, match=rf"{path}:3: line is not valid UTF-8"):
        read_next_sentence(path)


def test_real_wiki_prefix_is_one_document(data_dir: Path) -> None:
    path = data_dir / "corpora" / "wiki1m_prefix.txt"
    corpus = read_next_sentence(path, max_examples=50)
    lines = path.read_text(encoding="utf-8").splitlines()[:51]
    assert [(e.sentence.text, e.successors[0]) for e in corpus.examples] == [
        (a.strip(), b.strip()) for a, b in zip(lines[:-1], lines[1:], strict=True)
    ]
    assert {e.sentence.doc_id for e in corpus.examples} == {0}


def test_contiguous_batches_are_shuffled_consecutive_blocks() -> None:
    n, size = 103, 10
    out = contiguous_batches(n, size, seed=0, epoch=0)
    assert sorted(i for batch in out for i in batch) == list(range(n))  # every index exactly once
    for batch in out:
        assert batch == list(range(batch[0], batch[0] + len(batch)))  # a run of consecutive indices
        assert batch[0] % size == 0
    assert Counter(len(b) for b in out) == {10: 10, 3: 1}
    starts = [[b[0] for b in contiguous_batches(n, size, seed=0, epoch=e)] for e in range(3)]
    assert starts[0] != list(range(0, n, size))  # shuffled (11! orders: identity is a 1 in 4e7 chance)
    assert starts[0] != starts[1] != starts[2]
    assert contiguous_batches(n, size, 0, 1) == contiguous_batches(n, size, 0, 1)
    assert contiguous_batches(n, size, 0, 1) != contiguous_batches(n, size, 1, 1)
