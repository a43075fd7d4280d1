"""bench/static_capacity.py's parts: the word windows it adds to the fit, and heads that start as the recipe's
student and fold as it does. References: the sentence's own words, and a hand-written mean of rows."""

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


@pytest.mark.parametrize("kind", ["linear", "mlp", "max"])
def test_every_head_starts_as_the_recipes_mean_of_rows(kind: str) -> None:
    from bench.static_capacity import Head

    rng = np.random.default_rng(0)
    table = rng.normal(size=(50, 8)).astype(np.float32)  # (V, k)
    model = Head(table, 6, kind, hidden=16)
    lists = [[1, 2, 3], [4], [5, 5, 9, 10]]
    flat = torch.tensor([i for ids in lists for i in ids])
    offsets = torch.tensor([0, 3, 4])
    with torch.no_grad():
        got = model(flat, offsets).numpy()  # (3, 6)
    expected = np.stack([table[ids].mean(axis=0)[:6] for ids in lists])  # the first 6 PCA axes
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_the_folded_mean_is_the_linear_heads_encode() -> None:
    from bench.static_capacity import Head, folded_encode, head_encode

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
