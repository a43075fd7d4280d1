"""bench/static_capacity.py's parts: the word windows it adds to the fit, heads that start as the recipe's
student and fold as it does, the bigram buckets, and the attention layer's per-token tables. References: the
sentence's own words, a hand-written mean of rows, a hand-written loop over pairs, the padded layer. (The
weights head is sentcl's own: tests/modeling/test_static_weighted.py.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


def test_windows_are_shorter_runs_of_each_sentences_words() -> None:
    from bench.static_capacity import windows

    sentences = ["a b", "one two three", "the cat sat on the mat today", "x y z w v u t s"]
    found = windows(sentences, 2, 2)
    assert found == windows(sentences, 2, 2)  # seeded
    assert len(found) == len(set(found))
    for text in found:
        words = text.split()
        assert len(words) >= 2
        owners = [s.split() for s in sentences if len(s.split()) > len(words)]
        assert any(o[i : i + len(words)] == words for o in owners for i in range(len(o) - len(words) + 1)), (
            text
        )
    assert not any(w == "a b" for w in found)  # a sentence of min_words words has no shorter window


@pytest.mark.parametrize("kind", ["linear", "mlp", "max", "attention", "weights"])
def test_every_head_starts_as_the_recipes_mean_of_rows(kind: str) -> None:
    from bench.static_heads import make_head

    rng = np.random.default_rng(0)
    table = rng.normal(size=(50, 8)).astype(np.float32)  # (V, k)
    model = make_head(table, 6, kind, hidden=16)
    lists = [[1, 2, 3], [4], [5, 5, 9, 10]]
    flat = torch.tensor([i for ids in lists for i in ids])
    offsets = torch.tensor([0, 3, 4])
    with torch.no_grad():
        got = model(flat, offsets).numpy()  # (3, 6)
    expected = np.stack([table[ids].mean(axis=0)[:6] for ids in lists])  # the first 6 PCA axes
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_the_folded_mean_is_the_linear_heads_encode() -> None:
    from bench.static_capacity import folded_encode, head_encode
    from bench.static_heads import Head

    class Tokens:  # a whitespace tokenizer over a tiny vocabulary, as StaticTokenizer.ids returns rows
        def ids(self, texts: list[str]) -> object:
            from sentcl.modeling.static_tokens import TokenRows

            lists = [[int(w) for w in t.split()] for t in texts]
            flat = np.array([i for ids in lists for i in ids], dtype=np.int64)
            return TokenRows(flat, np.array([len(ids) for ids in lists], dtype=np.int64))

    rng = np.random.default_rng(1)
    model = Head(rng.normal(size=(20, 8)).astype(np.float32), 4, "linear", hidden=4)
    with torch.no_grad():
        model.linear.weight.copy_(torch.from_numpy(rng.normal(size=(4, 8)).astype(np.float32)))
    texts = ["1 2 3", "7", "4 4 19"]
    np.testing.assert_allclose(
        folded_encode(model, Tokens())(texts), head_encode(model, Tokens())(texts), rtol=1e-5, atol=1e-6
    )


def rows_of(lists: list[list[int]]) -> object:
    from sentcl.modeling.static_tokens import TokenRows

    return TokenRows.of(lists)


def test_bigram_buckets_follow_each_texts_tokens() -> None:
    from bench.static_heads import PRIME, with_bigrams

    lists = [[5, 6, 7], [], [9], [1, 2], [3, 3, 3, 3]]
    got = with_bigrams(rows_of(lists), 100, 7).lists()
    assert got == [
        ids + [100 + (a * PRIME + b) % 7 for a, b in zip(ids[:-1], ids[1:], strict=True)] for ids in lists
    ]


def test_the_attention_layers_tables_give_the_layers_outputs() -> None:
    from bench.static_heads import AttentionTables, make_head

    torch.manual_seed(3)
    table = np.random.default_rng(3).normal(size=(40, 16)).astype(np.float32)  # (V, k)
    model = make_head(table, 8, "attention", hidden=4)
    with torch.no_grad():  # every parameter moved off its start (its attention no longer zero)
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    lists = [[1, 2, 3], [], [4], [5, 6, 7, 8, 9], [9, 8, 7], [39, 0]]
    rows = rows_of(lists)
    with torch.no_grad():
        padded = model(torch.from_numpy(rows.ids), torch.from_numpy(rows.offsets)).numpy()  # (N, 8)
    tables = AttentionTables.of(model)
    np.testing.assert_allclose(tables(rows), padded, rtol=1e-4, atol=1e-5)
    assert not tables(rows)[1].any()  # an empty text gives zeros
