"""Streaming corpus: random access equals a plain read, the token cache equals the tokenizer and is reused."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer

from sentcl.data.collate import collate
from sentcl.data.readers import DataFormatError
from sentcl.data.streaming import LineFile, StreamingCorpus, cache_root, collate_cached, pad_token_ids

LINES = [
    "a man plays guitar",
    "",
    "  the dog runs in the garden  ",
    "\t",
    "café crème — naïve façade",  # multi-byte UTF-8
    "the market falls and the bank said the stock price falls again and again and again today",
    "last line without newline",
]


def _plain_read(path: Path) -> list[str]:
    """Independent reference: Python's own text reading, blank lines dropped, stripped."""
    text = path.read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip()]


@pytest.fixture()
def text_file(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_bytes("\r\n".join(LINES[:3]).encode("utf-8") + b"\n" + "\n".join(LINES[3:]).encode("utf-8"))
    return path


def test_random_access_equals_plain_read(text_file: Path, tmp_path: Path) -> None:
    expected = _plain_read(text_file)
    corpus = StreamingCorpus(text_file, cache_dir=tmp_path / "cache")
    assert len(corpus) == len(expected) == 5
    assert corpus.skipped == {"empty_lines": 2}
    order = list(range(len(expected)))
    random.Random(0).shuffle(order)
    for i in order:
        assert corpus[i] == expected[i]
        assert corpus.examples[i] == expected[i]
    assert corpus.examples[-1] == expected[-1]
    assert corpus.examples[1:3] == expected[1:3]
    with pytest.raises(IndexError, match="out of range"):
        corpus.examples[5]


def test_larger_file_and_max_examples(tmp_path: Path) -> None:
    rng = random.Random(1)
    words = ["alpha", "beta", "gamma", "δέλτα", "ε", ""]
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 9))) for _ in range(2000)]
    path = tmp_path / "big.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected = _plain_read(path)
    corpus = StreamingCorpus(path, cache_dir=tmp_path / "cache")
    assert len(corpus) == len(expected)
    assert corpus.skipped["empty_lines"] == len(lines) - len(expected)
    for i in rng.sample(range(len(expected)), 300):
        assert corpus[i] == expected[i]
    limited = StreamingCorpus(path, cache_dir=tmp_path / "cache", max_examples=10)
    assert len(limited) == 10 and list(limited.examples) == expected[:10]


def test_invalid_utf8_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"fine\nalso fine\nbroken \xff\xfe here\n")
    with pytest.raises(DataFormatError, match=r"bad\.txt:3: line is not valid UTF-8"):
        StreamingCorpus(path, cache_dir=tmp_path / "cache")
    assert not list((tmp_path / "cache" / "streaming").glob("*")), "a failed build must leave nothing behind"


def test_token_ids_equal_the_tokenizer(text_file: Path, tmp_path: Path, tiny_bert: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert))
    corpus = StreamingCorpus(text_file, cache_dir=tmp_path / "cache")
    with pytest.raises(RuntimeError, match="call tokenize"):
        corpus.token_ids(0)
    corpus.tokenize(tokenizer, max_length=8)
    for i, text in enumerate(_plain_read(text_file)):
        assert corpus.token_ids(i) == tokenizer(text, truncation=True, max_length=8)["input_ids"]


def test_collate_cached_equals_collate(text_file: Path, tmp_path: Path, tiny_bert: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert))
    corpus = StreamingCorpus(text_file, cache_dir=tmp_path / "cache")
    corpus.tokenize(tokenizer, max_length=12)
    index = [3, 0, 4, 2]
    texts = _plain_read(text_file)
    expected = collate([(texts[i], texts[i]) for i in index], tokenizer, 12)
    got = collate_cached(corpus, index, 2, tokenizer)
    assert got.keys() == expected.keys()
    for key in expected:
        assert torch.equal(got[key], expected[key]), key


def test_pad_token_ids_left_padding(tiny_bert: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert), padding_side="left")
    rows = [[2, 7, 3], [2, 3]]
    got = pad_token_ids(rows, tokenizer)
    assert got["input_ids"].tolist() == [[2, 7, 3], [tokenizer.pad_token_id, 2, 3]]
    assert got["attention_mask"].tolist() == [[1, 1, 1], [0, 1, 1]]


def test_caches_are_reused_and_keyed(text_file: Path, tmp_path: Path, tiny_bert: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert))
    cache = tmp_path / "cache"
    first = LineFile(text_file, cache)
    first.tokenize(tokenizer, max_length=8)
    assert first.built_index and first.built_tokens
    files = {p: p.stat().st_mtime_ns for p in (cache / "streaming").rglob("*") if p.is_file()}

    second = LineFile(text_file, cache)
    second.tokenize(tokenizer, max_length=8)
    assert not second.built_index and not second.built_tokens  # nothing re-read or re-tokenised
    assert {p: p.stat().st_mtime_ns for p in files} == files

    other_length = LineFile(text_file, cache)
    other_length.tokenize(tokenizer, max_length=4)
    assert other_length.built_tokens and not other_length.built_index
    assert (
        other_length.token_ids(4)
        == tokenizer(_plain_read(text_file)[4], truncation=True, max_length=4)["input_ids"]
    )
    assert len(list((cache / "streaming").glob("tokens-*"))) == 2

    cased = AutoTokenizer.from_pretrained(str(tiny_bert), do_lower_case=False)  # another normaliser
    other_tokenizer = LineFile(text_file, cache)
    other_tokenizer.tokenize(cased, max_length=8)
    assert other_tokenizer.built_tokens

    # a changed file (size and mtime) gets a new index: stale offsets are never used
    text_file.write_text("one new line\n", encoding="utf-8")
    changed = LineFile(text_file, cache)
    assert changed.built_index and list(changed) == ["one new line"]
    assert not list((cache / "streaming").glob(".*tmp-*")), "no temporary folder is left behind"


def test_cache_root_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SENTCL_CACHE", str(tmp_path / "env"))
    assert cache_root() == tmp_path / "env"
    assert cache_root(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv("SENTCL_CACHE")
    assert cache_root() == Path.home() / ".cache" / "sentcl"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        StreamingCorpus(tmp_path / "nope.txt", cache_dir=tmp_path)
