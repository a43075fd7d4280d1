"""The static model's fast tokenizer (modeling/static_tokens.py) against the Rust tokenizer itself, on generated
text that reaches every path: plain ASCII words, unknown words split by WordPiece, words over the length limit,
controls, accents, CJK, added tokens, and a tokenizer outside the BERT pipeline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from sentcl.modeling.locate import locate
from sentcl.modeling.static import load_tokenizer
from sentcl.modeling.static_tokens import StaticTokenizer, TokenRows

PIECES = [
    "a", "man", "plays", "the", "guitar", "The", "DOG", "running", "zz", "qqq", "unbelievably", "3", "42",
    " ", "  ", "\t", "\n", "\r", ".", ",", "!", "'", "-", "[", "]", "#", "##s", "é", "Café", "中文", "\x00",
    "\x0b", "\x7f", "\u00a0", "[MASK]", "[unk]", "x" * 101, "ab" * 30,
]  # fmt: skip
TEXTS = st.lists(st.lists(st.sampled_from(PIECES), max_size=12).map("".join), min_size=1, max_size=8)


def _rust_lists(rust: Any, texts: list[str]) -> list[list[int]]:  # noqa: ANN401 - a tokenizers.Tokenizer
    return [e.ids for e in rust.encode_batch(texts, add_special_tokens=False)]


@pytest.fixture(scope="module")
def teacher_rust() -> Any:  # noqa: ANN401 - the real all-MiniLM-L6-v2 tokenizer (30,522 tokens)
    return load_tokenizer(Path(locate("all-MiniLM-L6-v2").path) / "tokenizer.json")


@pytest.fixture(scope="module")
def tiny_rust(tiny_bert: Path) -> Any:  # noqa: ANN401 - a tiny vocabulary: most words are split or unknown
    return load_tokenizer(tiny_bert / "tokenizer.json")


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=TEXTS)
def test_the_real_tokenizers_ids(teacher_rust: Any, texts: list[str]) -> None:  # noqa: ANN401
    tokens = StaticTokenizer(teacher_rust)
    assert tokens.fast
    assert tokens.ids(texts).lists() == _rust_lists(teacher_rust, texts)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=TEXTS)
def test_a_tiny_vocabulary_splits_as_rust_does(tiny_rust: Any, texts: list[str]) -> None:  # noqa: ANN401
    assert StaticTokenizer(tiny_rust).ids(texts).lists() == _rust_lists(tiny_rust, texts)


def test_real_sentences_take_the_fast_path(teacher_rust: Any, data_dir: Path) -> None:  # noqa: ANN401
    from sentcl.evaluation.senteval_readers import load_sts_task

    pairs = load_sts_task(data_dir, "STSBenchmark", "test")["test"]
    texts = list(dict.fromkeys(s for a, b, _ in pairs for s in (a, b)))  # 2,700 distinct sentences
    tokens = StaticTokenizer(teacher_rust)
    assert tokens.ids(texts).lists() == _rust_lists(teacher_rust, texts)
    assert sum(tokens._plain(t) for t in texts) > 0.95 * len(texts)  # noqa: SLF001 - the path taken


def test_another_pipeline_is_the_rust_tokenizers_own() -> None:
    vocab = {"[UNK]": 0, "hello": 1, "world": 2, "Hello": 3}
    rust = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    rust.normalizer = normalizers.Strip()
    rust.pre_tokenizer = pre_tokenizers.Whitespace()
    tokens = StaticTokenizer(rust)
    texts = ["hello world", " Hello  there ", "", "world"]
    assert not tokens.fast
    assert tokens.ids(texts).lists() == [[1, 2], [3, 0], [], [2]]


@given(lengths=st.lists(st.integers(0, 7), max_size=6), limit=st.integers(1, 5), seed=st.integers(0, 99))
def test_cut_keeps_each_texts_first_tokens(lengths: list[int], limit: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = [rng.integers(0, 50, size=n).tolist() for n in lengths]
    flat = np.array([i for row in rows for i in row], dtype=np.int64)
    cut = TokenRows(flat, np.array(lengths, dtype=np.int64)).cut(limit)
    assert cut.lists() == [row[:limit] for row in rows]
