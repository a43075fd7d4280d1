"""ESimCSE's word repetition and ArcCSE's nested masked spans."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from sentcl.data.augment.nested_spans import NestedSpanMask
from sentcl.data.augment.repetition import WordRepetition, repetition_count_bound

WORDS = [f"w{i}" for i in range(20)]


def doubled_positions(original: list[str], out: list[str]) -> list[int]:
    """Which words of ``original`` (all distinct) appear twice in a row in ``out``; asserts nothing else changed."""
    doubled, k = [], 0
    for i, word in enumerate(original):
        assert out[k] == word, (original, out)
        if k + 1 < len(out) and out[k + 1] == word:
            doubled.append(i)
            k += 1
        k += 1
    assert k == len(out), (original, out)
    return doubled


@pytest.mark.parametrize(("n", "bound"), [(1, 1), (3, 2), (5, 2), (10, 3), (20, 6)])
def test_repetition_count_follows_the_papers_bound(n: int, bound: int):
    # dup_len ~ U{0..max(2, int(0.32 n))}, never above n: written out for 0.32
    assert repetition_count_bound(0.32, n) == bound
    aug = WordRepetition(0.32, seed=0)
    counts = Counter(len(doubled_positions(WORDS[:n], aug(" ".join(WORDS[:n])).split())) for _ in range(3000))
    assert sorted(counts) == list(range(bound + 1))
    for value in counts.values():  # uniform over 0..bound
        assert abs(value / 3000 - 1 / (bound + 1)) < 0.05


def test_repetition_duplicates_words_in_place_and_is_deterministic_with_a_seed():
    sentence = " ".join(WORDS[:10])
    first, again = WordRepetition(0.32, seed=7), WordRepetition(0.32, seed=7)
    a = [first(sentence) for _ in range(20)]
    assert [again(sentence) for _ in range(20)] == a
    assert len(set(a)) > 1  # it is random across calls
    positions = [tuple(doubled_positions(WORDS[:10], s.split())) for s in a]
    assert any(positions) and all(len(set(p)) == len(p) for p in positions)
    with pytest.raises(ValueError, match="dup_rate"):
        WordRepetition(1.5)


def special_ids():
    from sentcl.data.augment.tokens import SpecialIds

    return SpecialIds(pad=0, unk=1, mask=4, structural=(0, 2, 3, 4))


def batch(lengths: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(lengths) + 2
    ids = torch.zeros(len(lengths), width, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for r, n in enumerate(lengths):
        ids[r, 0], ids[r, 1 : n + 1], ids[r, n + 1] = 2, torch.arange(10, 10 + n), 3  # [CLS] w.. [SEP]
        mask[r, : n + 2] = 1
    return ids, mask


def test_nested_spans_strong_span_contains_the_weak_span_and_is_longer():
    ids, mask = batch([1, 2, 5, 10, 20, 30] * 20)
    pair = NestedSpanMask(0.1, 0.2, special_ids(), generator=3)
    weak = pair.weak(ids, mask)
    strong = pair.strong(ids, mask)
    w, s = weak.input_ids == 4, strong.input_ids == 4  # (N, L): masked positions
    assert torch.equal(weak.attention_mask, mask) and torch.equal(strong.attention_mask, mask)
    assert bool((w <= s).all())  # every weak-masked token is strong-masked
    n = mask.sum(1) - 2
    for r in range(ids.size(0)):
        cw, cs = int(w[r].sum()), int(s[r].sum())
        assert cw == max(1, int(0.1 * int(n[r]) + 0.5))
        assert cs == min(int(n[r]), max(int(0.2 * int(n[r]) + 0.5), cw + 1))
        idx = s[r].nonzero().flatten()
        assert int(idx.max() - idx.min()) + 1 == cs  # one contiguous span
    assert not bool((w | s)[:, 0].any())  # [CLS] never masked
    # the spans move: the strong span does not always start where the weak one does
    starts = {(int(w[r].nonzero()[0]), int(s[r].nonzero()[0])) for r in range(ids.size(0)) if int(n[r]) == 30}
    assert len({a - b for a, b in starts}) > 1


def test_nested_spans_are_deterministic_and_strong_needs_weak_first():
    ids, mask = batch([8, 12, 16])
    runs = []
    for _ in range(2):
        pair = NestedSpanMask(0.1, 0.3, special_ids(), generator=5)
        runs.append((pair.weak(ids, mask).input_ids, pair.strong(ids, mask).input_ids))
    assert torch.equal(runs[0][0], runs[1][0]) and torch.equal(runs[0][1], runs[1][1])
    with pytest.raises(RuntimeError, match="must follow"):
        NestedSpanMask(0.1, 0.3, special_ids()).strong(ids, mask)
    with pytest.raises(ValueError, match="exceed"):
        NestedSpanMask(0.2, 0.2, special_ids())
