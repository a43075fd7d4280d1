"""bench/static_words.py: corpus words outside the vocabulary become whole-word ids that the Rust tokenizer itself
gives back, every other text keeps its ids, and a word's row is the teacher's own pooled output of the word."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.tiny_bert import build_tiny_bert
from modeling.modeling_folders import st_folder

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


@pytest.fixture(scope="module")
def teacher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("words")
    return st_folder(tmp / "teacher", build_tiny_bert(tmp / "bert"), "mean", [], True)


def test_split_words_are_the_frequent_words_outside_the_vocabulary(teacher: Path) -> None:
    from tokenizers import Tokenizer

    from bench.static_words import split_words

    rust = Tokenizer.from_file(str(teacher / "tokenizer.json"))
    corpus = ["The Zebra plays guitar.", "a zebra and a Lion", "lion, lion!", "the x-ray", "42 zebras"]
    # by hand: lower-cased words not in the tiny vocabulary, twice or more: lion (3), zebra (2)
    assert split_words(rust, corpus, 10) == ["lion", "zebra"]
    assert split_words(rust, corpus, 1) == ["lion"]
    assert split_words(rust, corpus, 10, min_count=1) == ["lion", "zebra", "ray", "zebras"]  # "x", "42" out


def test_added_words_are_one_id_and_other_text_is_unchanged(teacher: Path) -> None:
    from tokenizers import Tokenizer

    from bench.static_words import with_words
    from sentcl.modeling.static_tokens import StaticTokenizer

    rust = Tokenizer.from_file(str(teacher / "tokenizer.json"))
    rust.no_padding()
    size = rust.get_vocab_size()
    ext = with_words(rust, ["lion", "zebra"])
    assert ext.get_vocab_size() == size + 2
    texts = ["A Lion near the zebra.", "Zebras are big", "café lion", "the dog runs"]
    got = [e.ids for e in ext.encode_batch(texts, add_special_tokens=False)]
    before = [e.ids for e in rust.encode_batch(texts, add_special_tokens=False)]
    lion, zebra = size, size + 1

    def ids(word: str) -> list[int]:
        return rust.encode(word, add_special_tokens=False).ids

    assert got[0] == [*ids("a"), lion, *ids("near"), *ids("the"), zebra, *ids(".")]
    assert got[1][0] == zebra  # "zebras": WordPiece matches the longest piece first, the added word
    assert got[1][2:] == ids("are") + ids("big") and rust.id_to_token(got[1][1]) == "##s"
    assert got[2][-1] == lion and got[3] == before[3]
    # sentcl's own static tokenizer (its plain-ASCII path and the Rust path alike) reads the same ids
    assert StaticTokenizer(ext).ids(texts).lists() == got


def test_a_words_row_is_the_teachers_pooled_output(teacher: Path) -> None:
    from bench.static_words import word_vectors
    from sentcl.modeling.encoder import SentenceEncoder

    encoder = SentenceEncoder.from_pretrained(str(teacher)).eval()
    rows = word_vectors(encoder, ["lion", "zebra"])
    tokens = encoder.tokenizer(["lion", "zebra"], padding=True, return_tensors="pt")
    import torch

    with torch.inference_mode():
        states = encoder.backbone(**tokens).last_hidden_state  # (2, L, H)
    mask = tokens["attention_mask"].unsqueeze(-1).float()  # (2, L, 1)
    expected = ((states * mask).sum(1) / mask.sum(1)).numpy()  # (2, H): mean over [CLS] pieces [SEP]
    np.testing.assert_allclose(rows, expected, atol=1e-5)
    assert encoder.normalize_output  # left as it was
    assert word_vectors(encoder, []).shape == (0, rows.shape[1])
