"""Token- and feature-level augmentations against hand-written per-sentence loops."""

from __future__ import annotations

import random
from decimal import ROUND_HALF_UP, Decimal

import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

from sentcl.data.augment import (
    FEATURE_AUGMENTATIONS,
    TOKEN_AUGMENTATIONS,
    FeatureCutoff,
    MaskedLMReplacement,
    SpanCutoff,
    TokenCutoff,
    TokenShuffle,
    change_counts,
)

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PAD, UNK, CLS, SEP, MASK = range(5)
# fmt: off
WORDS = [
    "the", "a", "man", "woman", "dog", "cat", "horse", "bird", "car", "road", "house", "city", "river",
    "tree", "garden", "music", "guitar", "piano", "song", "is", "are", "was", "plays", "rides", "eats",
    "runs", "walks", "sits", "reads", "big", "small", "red", "green", "blue", "old", "young", "happy",
    "sad", "fast", "slow", "on", "in", "at", "with", "near", "under", "over", "and", "of", "to",
]
# fmt: on


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> BertTokenizerFast:
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(SPECIALS + WORDS) + "\n", encoding="utf-8")
    tok = BertTokenizerFast(vocab=str(path))  # transformers 5 ignores vocab_file=
    assert len(tok) == len(SPECIALS) + len(WORDS)
    return tok


def sentences(num: int, seed: int, low: int = 1, high: int = 30) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))) for _ in range(num)]


def encode(tok: BertTokenizerFast, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    enc = tok(texts, padding=True, return_tensors="pt")
    return enc["input_ids"], enc["attention_mask"]


def expected(rate: float, n: int, cap: int | None = None) -> int:
    """Reference count: Decimal round-half-up of rate*n, at least 1 for a positive rate, at most cap (n)."""
    if n == 0:
        return 0
    c = int((Decimal(str(rate)) * n).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    c = max(c, 1) if rate > 0 else c
    return max(0, min(c, n if cap is None else cap))


def real_positions(ids: torch.Tensor, mask: torch.Tensor, i: int) -> list[int]:
    return [j for j in range(ids.shape[1]) if mask[i, j] == 1 and int(ids[i, j]) not in (PAD, CLS, SEP, MASK)]


def test_change_counts_round_half_up() -> None:
    n = torch.tensor([0, 1, 3, 5, 10, 10, 20, 7])
    assert change_counts(0.1, n).tolist() == [0, 1, 1, 1, 1, 1, 2, 1]
    assert change_counts(0.35, n).tolist() == [0, 1, 1, 2, 4, 4, 7, 2]  # 3.5 -> 4 and 1.75 -> 2, 2.45 -> 2
    assert change_counts(0.0, n).tolist() == [0] * 8
    assert change_counts(1.0, n).tolist() == n.tolist()


@pytest.mark.parametrize("replace_with, token", [("unk", UNK), ("mask", MASK), ("pad", PAD)])
@pytest.mark.parametrize("rate", [0.1, 0.25, 0.5])
def test_token_cutoff_changes_exact_count(
    tokenizer: BertTokenizerFast, replace_with: str, token: int, rate: float
) -> None:
    ids, mask = encode(tokenizer, sentences(24, seed=1))
    out = TokenCutoff(rate, tokenizer, replace_with=replace_with, generator=3)(ids, mask)
    for i in range(ids.shape[0]):
        real = real_positions(ids, mask, i)
        changed = [j for j in range(ids.shape[1]) if out.input_ids[i, j] != ids[i, j]]
        cap = len(real) - 1 if replace_with == "pad" else None  # erasing keeps one token visible
        assert len(changed) == expected(rate, len(real), cap)
        assert set(changed) <= set(real)  # [CLS], [SEP] and padding untouched
        assert all(int(out.input_ids[i, j]) == token for j in changed)
        for j in range(ids.shape[1]):  # the mask is zeroed exactly at the erased [PAD] positions
            assert int(out.attention_mask[i, j]) == (
                0 if replace_with == "pad" and j in changed else int(mask[i, j])
            )


def test_token_cutoff_pad_can_keep_attention(tokenizer: BertTokenizerFast) -> None:
    ids, mask = encode(tokenizer, sentences(8, seed=2))
    out = TokenCutoff(0.3, tokenizer, replace_with="pad", mask_attention=False, generator=0)(ids, mask)
    assert torch.equal(out.attention_mask, mask)
    assert (out.input_ids != ids).any()


def test_unk_counts_as_real_token(tokenizer: BertTokenizerFast) -> None:
    ids, mask = encode(tokenizer, ["zebra giraffe okapi the"])  # three out-of-vocabulary words -> [UNK]
    assert ids[0].tolist() == [CLS, UNK, UNK, UNK, WORDS.index("the") + 5, SEP]
    out = TokenCutoff(1.0, tokenizer, replace_with="mask", generator=0)(ids, mask)
    assert out.input_ids[0].tolist() == [CLS, MASK, MASK, MASK, MASK, SEP]


@pytest.mark.parametrize("augmentation", ["token_cutoff", "span_cutoff"])
def test_remove_deletes_exact_count_keeps_order(tokenizer: BertTokenizerFast, augmentation: str) -> None:
    ids, mask = encode(tokenizer, sentences(24, seed=4))
    aug = TOKEN_AUGMENTATIONS.build(
        augmentation, rate=0.3, tokenizer=tokenizer, replace_with="remove", generator=5
    )
    out = aug(ids, mask)
    for i in range(ids.shape[0]):
        before = [int(ids[i, j]) for j in real_positions(ids, mask, i)]
        kept = int(out.attention_mask[i].sum())
        row = out.input_ids[i].tolist()
        after = row[1 : kept - 1]
        assert row[0] == CLS and row[kept - 1] == SEP and row[kept:] == [PAD] * (ids.shape[1] - kept)
        assert out.attention_mask[i].tolist() == [1] * kept + [0] * (ids.shape[1] - kept)
        assert len(after) == len(before) - expected(0.3, len(before), cap=len(before) - 1)
        it = iter(before)  # a subsequence: the kept tokens in their original order
        assert all(any(tok == b for b in it) for tok in after)
        if augmentation == "span_cutoff":  # the removed tokens were consecutive
            cut = len(before) - len(after)
            assert any(before[:s] + before[s + cut :] == after for s in range(len(before) - cut + 1))


def test_span_cutoff_is_contiguous(tokenizer: BertTokenizerFast) -> None:
    ids, mask = encode(tokenizer, sentences(24, seed=6, low=2))
    out = SpanCutoff(0.2, tokenizer, generator=1)(ids, mask)
    starts = set()
    for i in range(ids.shape[0]):
        real = real_positions(ids, mask, i)
        changed = [k for k, j in enumerate(real) if out.input_ids[i, j] != ids[i, j]]
        assert len(changed) == expected(0.2, len(real), cap=len(real) - 1)
        assert changed == list(
            range(changed[0], changed[0] + len(changed))
        )  # every row has >= 2 real tokens here
        assert all(
            int(out.input_ids[i, real[k]]) == PAD and out.attention_mask[i, real[k]] == 0 for k in changed
        )
        assert [int(out.input_ids[i, j]) for j in range(ids.shape[1]) if j not in real] == [
            int(ids[i, j]) for j in range(ids.shape[1]) if j not in real
        ]
        starts.add(changed[0])
    assert len(starts) > 3  # the span's start varies


def test_shuffle_is_permutation_of_real_tokens(tokenizer: BertTokenizerFast) -> None:
    ids, mask = encode(tokenizer, sentences(24, seed=7) + ["zebra dog cat"])
    out = TokenShuffle(tokenizer, generator=2)(ids, mask)
    moved = 0
    for i in range(ids.shape[0]):
        real = real_positions(ids, mask, i)
        before = [int(ids[i, j]) for j in real]
        after = [int(out.input_ids[i, j]) for j in real]
        assert sorted(after) == sorted(before)
        moved += after != before
        others = [j for j in range(ids.shape[1]) if j not in real]
        assert out.input_ids[i, others].tolist() == ids[i, others].tolist()
    assert torch.equal(out.attention_mask, mask)
    assert moved > 12


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("token_cutoff", {"rate": 0.2}),
        ("span_cutoff", {"rate": 0.2}),
        ("token_shuffle", {}),
        ("token_cutoff", {"rate": 0.2, "replace_with": "remove"}),
    ],
)
def test_deterministic_under_seed(tokenizer: BertTokenizerFast, name: str, kwargs: dict) -> None:
    ids, mask = encode(tokenizer, sentences(4, seed=8, low=40, high=40))
    first = TOKEN_AUGMENTATIONS.build(name, tokenizer=tokenizer, generator=11, **kwargs)(ids, mask)
    again = TOKEN_AUGMENTATIONS.build(name, tokenizer=tokenizer, generator=11, **kwargs)(ids, mask)
    other = TOKEN_AUGMENTATIONS.build(name, tokenizer=tokenizer, generator=12, **kwargs)(ids, mask)
    assert torch.equal(first.input_ids, again.input_ids) and torch.equal(
        first.attention_mask, again.attention_mask
    )
    assert not torch.equal(first.input_ids, other.input_ids)
    assert torch.equal(ids, encode(tokenizer, sentences(4, seed=8, low=40, high=40))[0])  # input not modified


def test_erasing_never_empties_a_sentence(tokenizer: BertTokenizerFast) -> None:
    ids, mask = encode(tokenizer, sentences(16, seed=9, low=1, high=4))
    for aug in (TokenCutoff(1.0, tokenizer, "remove", generator=0), SpanCutoff(1.0, tokenizer, generator=0)):
        out = aug(ids, mask)
        for i in range(ids.shape[0]):
            assert len(real_positions(out.input_ids, out.attention_mask, i)) == 1


def test_bad_arguments(tokenizer: BertTokenizerFast) -> None:
    with pytest.raises(ValueError, match="rate"):
        TokenCutoff(1.5, tokenizer)
    with pytest.raises(ValueError, match="replace_with"):
        TokenCutoff(0.1, tokenizer, replace_with="zero")
    with pytest.raises(ValueError, match=r"\(N, L\)"):
        TokenShuffle(tokenizer)(torch.zeros(3, dtype=torch.long), torch.ones(3, dtype=torch.long))
    with pytest.raises(KeyError, match="token_cutoff"):
        TOKEN_AUGMENTATIONS.get("cutoff")


@pytest.mark.parametrize("rate, hidden, count", [(0.2, 32, 6), (0.1, 48, 5), (0.5, 10, 5)])
def test_feature_cutoff_zeroes_exact_dims(rate: float, hidden: int, count: int) -> None:
    x = torch.randn(6, 7, hidden, generator=torch.Generator().manual_seed(0)) + 10.0  # no zero entries
    out = FEATURE_AUGMENTATIONS.build("feature_cutoff", rate=rate, generator=1)(x)
    patterns = set()
    for i in range(x.shape[0]):
        zero_dims = [h for h in range(hidden) if bool((out[i, :, h] == 0).all())]
        assert len(zero_dims) == count  # the same dims at every token of the sentence
        assert int((out[i] == 0).sum()) == count * x.shape[1]
        kept = [h for h in range(hidden) if h not in zero_dims]
        assert torch.equal(out[i][:, kept], x[i][:, kept])
        patterns.add(tuple(zero_dims))
    assert len(patterns) > 1  # drawn per sentence
    assert torch.equal(FeatureCutoff(rate, generator=1)(x), out)
    assert not torch.equal(FeatureCutoff(rate, generator=2)(x), out)


@pytest.fixture(scope="module")
def masked_lm(tokenizer: BertTokenizerFast) -> BertForMaskedLM:
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
    )
    return BertForMaskedLM(config).eval()


@pytest.mark.parametrize("sample", [False, True])
def test_mlm_replacement_exact_count_and_predictions(
    tokenizer: BertTokenizerFast, masked_lm: BertForMaskedLM, sample: bool
) -> None:
    ids, mask = encode(tokenizer, sentences(10, seed=13, low=3, high=25))
    out = MaskedLMReplacement(0.15, masked_lm, tokenizer, sample=sample, generator=4)(ids, mask)
    changed = out.input_ids != ids  # (N, L)
    for i in range(ids.shape[0]):
        real = real_positions(ids, mask, i)
        rows = [j for j in range(ids.shape[1]) if changed[i, j]]
        assert len(rows) == expected(0.15, len(real)) and set(rows) <= set(real)
        assert all(int(out.input_ids[i, j]) >= len(SPECIALS) for j in rows)  # never a special or [UNK]
    assert torch.equal(out.attention_mask, mask)
    if not sample:  # reference: the model's argmax at the masked positions, specials and originals excluded
        with torch.no_grad():
            logits = masked_lm(input_ids=ids.masked_fill(changed, MASK), attention_mask=mask).logits
        for i, j in changed.nonzero().tolist():
            scores = logits[i, j].clone()
            scores[: len(SPECIALS)] = float("-inf")
            scores[ids[i, j]] = float("-inf")
            assert int(out.input_ids[i, j]) == int(scores.argmax())
    again = MaskedLMReplacement(0.15, masked_lm, tokenizer, sample=sample, generator=4)(ids, mask)
    other = MaskedLMReplacement(0.15, masked_lm, tokenizer, sample=sample, generator=5)(ids, mask)
    assert torch.equal(again.input_ids, out.input_ids) and not torch.equal(other.input_ids, out.input_ids)
