"""The static fast tokenizer proved equal to the Rust tokenizer under generated tokenizer settings, not only the
stock one: lowercase or cased, ``max_input_chars_per_word`` from 1 to 12 (below the length of vocabulary words),
added tokens, the continuing-subword prefix, and strip-accents. Each example builds a real ``tokenizers``
BERT pipeline (BertNormalizer, BertPreTokenizer, WordPiece) from the drawn settings and a drawn vocabulary,
then compares ``StaticTokenizer.ids`` with ``Tokenizer.encode_batch`` on drawn texts. A setting the fast path
does not reproduce must send the text to the Rust path, so the ids are equal whatever is drawn."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import AddedToken, Tokenizer, models, normalizers, pre_tokenizers

from sentcl.modeling.static_tokens import StaticTokenizer

LETTERS = "abcdeABCDE"
WORDS = st.text(alphabet=LETTERS + "01", min_size=1, max_size=9)
PUNCT = list(".,!'-[]#@")
OTHER = [" ", "  ", "\t", "\n", "é", "É", "\u00a0", "中", "\x00"]


@st.composite
def tokenizers_and_texts(draw: st.DrawFn) -> tuple[Any, list[str]]:
    lowercase = draw(st.booleans())
    strip_accents = draw(st.sampled_from([None, True, False]))
    prefix = draw(st.sampled_from(["##", "@@", ""]))
    max_chars = draw(st.integers(1, 12))
    words = draw(st.lists(WORDS, min_size=1, max_size=25, unique=True))
    vocab_words = ["[UNK]", *words, *PUNCT, *[prefix + w for w in words[:10]], *list(LETTERS)]
    vocab = {w: i for i, w in enumerate(dict.fromkeys(vocab_words))}
    rust = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=max_chars))
    rust.model.continuing_subword_prefix = prefix
    rust.normalizer = normalizers.BertNormalizer(lowercase=lowercase, strip_accents=strip_accents)
    rust.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    added = draw(st.lists(st.sampled_from(["[MASK]", "zqz", "Ab", "<x>"]), max_size=2, unique=True))
    if added:
        rust.add_tokens([AddedToken(a, normalized=draw(st.booleans())) for a in added])
    pieces = st.sampled_from([*words, *PUNCT, *OTHER, *added, "x" * 15])
    texts = draw(st.lists(st.lists(pieces, max_size=10).map(" ".join), min_size=1, max_size=6))
    return rust, texts


@settings(max_examples=150, deadline=None)
@given(case=tokenizers_and_texts())
def test_fast_ids_equal_the_rust_tokenizers_under_generated_settings(case: tuple[Any, list[str]]) -> None:
    rust, texts = case
    expected = [e.ids for e in rust.encode_batch(texts, add_special_tokens=False)]
    assert StaticTokenizer(rust).ids(texts).lists() == expected


def test_a_vocabulary_word_over_the_length_rule_is_unknown() -> None:
    """The sweep's instance, kept as a fixed example: a word in the vocabulary but longer than
    ``max_input_chars_per_word`` is [UNK] (the length rule comes before the look-up)."""
    vocab = {"[UNK]": 0, "guitar": 1, "a": 2, "##r": 3}
    rust = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=5))
    rust.normalizer = normalizers.BertNormalizer(lowercase=True)
    rust.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokens = StaticTokenizer(rust)
    assert tokens.fast
    assert (
        tokens.ids(["a guitar"]).lists()
        == [[2, 0]]
        == [rust.encode("a guitar", add_special_tokens=False).ids]
    )
