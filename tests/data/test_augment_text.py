"""Word-level augmentations, the WordNet reader (on a hand-written fixture)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

from sentcl.data.augment import (
    TEXT_AUGMENTATIONS,
    Crop,
    DeleteOneWord,
    MLMReplacement,
    SynonymReplacement,
    WordDeletion,
    WordNet,
    WordNetFormatError,
    WordNetNotFoundError,
    change_count,
)

LONG = " ".join(f"w{i}" for i in range(20))  # 20 distinct words

# A tiny WordNet: synsets as (lemmas); the reader must map each lemma to the union of its synsets' words.
SYNSETS = [
    ("car", "auto", "automobile", "motor_car"),
    ("car", "railcar"),
    ("cat", "true_cat"),
    ("dog", "domestic_dog"),
    ("mouse",),
]
SYNONYMS = {  # written out by hand from SYNSETS
    "car": ["auto", "automobile", "motor car", "railcar"],
    "cat": ["true cat"],
    "dog": ["domestic dog"],
    "mouse": [],
}


def write_wordnet(folder: Path) -> Path:
    """data.noun and index.noun in wndb(5) format, with the licence header lines WordNet files start with."""
    folder.mkdir(parents=True, exist_ok=True)
    data = "  1 This fixture imitates the Princeton WordNet licence header.\n  2 \n"
    offsets: dict[str, list[int]] = {}
    for lemmas in SYNSETS:
        offset = len(data.encode("utf-8"))
        words = " ".join(f"{w} 0" for w in lemmas)
        data += f"{offset:08d} 06 n {len(lemmas):02x} {words} 000 | a test gloss  \n"
        for w in lemmas:
            offsets.setdefault(w, []).append(offset)
    (folder / "data.noun").write_text(data, encoding="utf-8")
    index = "  1 licence header\n" + "".join(
        f"{w} n {len(o)} 1 @ {len(o)} 0 {' '.join(f'{x:08d}' for x in o)}  \n"
        for w, o in sorted(offsets.items())
    )
    (folder / "index.noun").write_text(index, encoding="utf-8")
    (folder / "noun.exc").write_text("mice mouse\n", encoding="utf-8")
    return folder


@pytest.fixture()
def wordnet_dir(tmp_path: Path) -> Path:
    return write_wordnet(tmp_path / "wordnet")


def test_change_count_by_hand() -> None:
    assert [change_count(0.1, n) for n in (0, 1, 2, 3, 10, 15, 20, 25)] == [0, 0, 1, 1, 1, 2, 2, 3]
    assert [change_count(0.3, n) for n in (5, 10, 20)] == [2, 3, 6]  # 1.5 rounds half up
    assert change_count(1.0, 4) == 3 and change_count(1.0, 4, keep_one=False) == 4
    with pytest.raises(ValueError, match="rate"):
        change_count(-0.1, 3)


@pytest.mark.parametrize("k, kept", [(0.1, 18), (0.2, 16), (0.3, 14)])
def test_crop_keeps_contiguous_span(k: float, kept: int) -> None:
    words = LONG.split()
    crop = Crop(k, seed=0)
    starts = set()
    for _ in range(200):
        out = crop(LONG).split()
        assert len(out) == kept
        matches = [s for s in range(len(words)) if words[s : s + kept] == out]
        assert len(matches) == 1
        starts.add(matches[0])
    assert starts == set(range(20 - kept + 1))  # every placement of the span occurs


@pytest.mark.parametrize("k, kept", [(0.1, 18), (0.2, 16), (0.3, 14)])
def test_word_deletion_deletes_exact_count(k: float, kept: int) -> None:
    words = LONG.split()
    deletion = TEXT_AUGMENTATIONS.build("word_deletion", k=k, seed=1)
    for _ in range(50):
        out = deletion(LONG).split()
        assert len(out) == kept
        assert out == [w for w in words if w in out]  # a subsequence in the original order


def test_delete_one_word() -> None:
    out = DeleteOneWord(seed=0)(LONG).split()
    assert len(out) == 19 and out == [w for w in LONG.split() if w in out]
    assert DeleteOneWord(seed=0)("alone") == "alone"


@pytest.mark.parametrize(
    "make", [lambda: Crop(0.9, seed=0), lambda: WordDeletion(1.0, seed=0), lambda: DeleteOneWord(seed=0)]
)
def test_never_empty(make) -> None:  # noqa: ANN001 - a factory
    aug = make()
    for sentence in ("one", "two words", "three small words"):
        assert len(aug(sentence).split()) >= 1
    with pytest.raises(ValueError, match="empty sentence"):
        aug("   ")
    with pytest.raises(ValueError, match="sentence 1 of the batch"):
        aug.batch(["fine", ""])


@pytest.mark.parametrize("name", ["crop", "word_deletion", "delete_one_word"])
def test_deterministic_under_seed(name: str) -> None:
    text = " ".join(f"w{i}" for i in range(40))
    run = [TEXT_AUGMENTATIONS.build(name, seed=s).batch([text] * 5) for s in (3, 3, 4)]
    assert run[0] == run[1] and run[0] != run[2]
    assert len(set(run[0])) > 1  # the generator advances between calls


def test_registry_names() -> None:
    assert {"crop", "word_deletion", "delete_one_word", "synonym_replacement", "mlm_replacement"} <= set(
        TEXT_AUGMENTATIONS.names()
    )


# ---------------------------------------------------------------- WordNet


def test_wordnet_reader_on_fixture(wordnet_dir: Path) -> None:
    wn = WordNet(wordnet_dir, pos=("n",))
    for word, synonyms in SYNONYMS.items():
        assert wn.synonyms(word) == synonyms
    assert wn.synonyms("cars") == SYNONYMS["car"]  # morphy: -s detachment
    assert wn.morphy("mice", "n") == ["mouse"]  # morphy: exception list
    assert [s.words for s in wn.synsets("car")] == [SYNSETS[0], SYNSETS[1]]
    assert wn.synonyms("giraffe") == []


def test_wordnet_env_var_and_missing_folder(
    wordnet_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SENTCL_WORDNET", str(wordnet_dir))
    assert WordNet(pos=("n",)).synonyms("dog") == ["domestic dog"]
    monkeypatch.setenv("SENTCL_WORDNET", str(tmp_path / "nowhere"))
    with pytest.raises(WordNetNotFoundError, match=r"apt-get install .*wordnet-base"):
        WordNet()
    with pytest.raises(WordNetNotFoundError, match="index.verb"):
        WordNet(wordnet_dir)  # verbs asked for, but the fixture has nouns only


def test_wordnet_bad_lines_name_file_and_line(wordnet_dir: Path) -> None:
    index = wordnet_dir / "index.noun"
    index.write_text(index.read_text(encoding="utf-8") + "broken n 2 0 1 0 00000001\n", encoding="utf-8")
    with pytest.raises(WordNetFormatError, match=r"index\.noun, line 12"):
        WordNet(wordnet_dir, pos=("n",)).synonyms("car")
    write_wordnet(wordnet_dir)
    (wordnet_dir / "index.noun").write_text("car n 1 0 1 0 00000003\n", encoding="utf-8")
    with pytest.raises(WordNetFormatError, match=r"data\.noun, byte offset 3"):
        WordNet(wordnet_dir, pos=("n",)).synonyms("car")


def rejoin_multiword(text: str) -> str:
    """Glue the fixture's two-word synonyms back into one token so outputs align word by word with inputs."""
    for synonyms in SYNONYMS.values():
        for s in (s for s in synonyms if " " in s):
            text = text.replace(s, s.replace(" ", "_")).replace(
                s.capitalize(), s.capitalize().replace(" ", "_")
            )
    return text


def test_synonym_replacement_counts_and_keeps_form(wordnet_dir: Path) -> None:
    sentence = "The Car chased a dog, near the old cat ."  # candidates: Car, dog, cat (3 of 10 words)
    candidates = {1: "car", 4: "dog", 8: "cat"}
    before = sentence.split()
    seen = set()
    for k, count in ((0.1, 1), (0.2, 2), (0.5, 3)):  # round_half_up(10 k) = 1, 2, 5 -> capped at 3 candidates
        aug = TEXT_AUGMENTATIONS.build(
            "synonym_replacement", k=k, wordnet=str(wordnet_dir), pos=("n",), seed=0
        )
        for _ in range(20):
            after = rejoin_multiword(aug(sentence)).split()
            assert len(after) == len(before)
            changed = [i for i in range(len(before)) if before[i] != after[i]]
            assert len(changed) == count and set(changed) <= set(candidates)
            for i in changed:
                core = after[i].removesuffix(",").replace("_", " ")
                assert core.lower() in SYNONYMS[candidates[i]]
                assert core[0].isupper() == before[i][0].isupper()  # the initial capital is kept
                assert after[i].endswith(",") == before[i].endswith(",")  # and the punctuation
                seen.add(core.lower())
    assert seen == set(SYNONYMS["car"] + SYNONYMS["dog"] + SYNONYMS["cat"])  # every synonym gets drawn


def test_synonym_replacement_deterministic(wordnet_dir: Path) -> None:
    wn = WordNet(wordnet_dir, pos=("n",))
    rng = random.Random(0)
    text = " ".join(rng.choice(["car", "dog", "cat", "tree"]) for _ in range(40))
    run = [SynonymReplacement(0.3, wn, seed=s).batch([text] * 3) for s in (5, 5, 6)]
    assert run[0] == run[1] and run[0] != run[2]


# ---------------------------------------------------------------- masked-LM replacement

# fmt: off
VOCAB_WORDS = [
    "the", "a", "man", "dog", "cat", "car", "road", "house", "big", "small", "red", "old", "young", "runs",
    "walks", "sits", "on", "in", "at", "with", "near", "and",
]
# fmt: on


@pytest.fixture(scope="module")
def mlm(tmp_path_factory: pytest.TempPathFactory) -> tuple[BertForMaskedLM, BertTokenizerFast]:
    path = tmp_path_factory.mktemp("mlm") / "vocab.txt"
    path.write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *VOCAB_WORDS]) + "\n", encoding="utf-8"
    )
    tok = BertTokenizerFast(vocab=str(path))  # transformers 5 ignores vocab_file=
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
    )
    return BertForMaskedLM(config), tok


def test_mlm_replacement_text(mlm: tuple[BertForMaskedLM, BertTokenizerFast]) -> None:
    model, tok = mlm
    rng = random.Random(1)
    texts = [" ".join(rng.choice(VOCAB_WORDS) for _ in range(n)) for n in (1, 4, 7, 10, 20, 30)]
    aug = TEXT_AUGMENTATIONS.build(
        "mlm_replacement", k=0.15, model=model, tokenizer=tok, batch_size=4, generator=0
    )
    out = aug.batch(texts)
    for before, after, count in zip(
        texts, out, (1, 1, 1, 2, 3, 5), strict=True
    ):  # round_half_up(0.15 n), >= 1
        b, a = before.split(), after.split()
        assert len(a) == len(b) and all(w in VOCAB_WORDS for w in a)  # never a special token
        assert sum(x != y for x, y in zip(a, b, strict=True)) == count
    again = MLMReplacement(0.15, model, tok, batch_size=4, generator=0).batch(texts)
    other = MLMReplacement(0.15, model, tok, batch_size=4, generator=1).batch(texts)
    assert again == out and other != out
    single = MLMReplacement(0.15, model, tok, generator=0)(texts[5]).split()  # one sentence, no batch
    assert sum(x != y for x, y in zip(single, texts[5].split(), strict=True)) == 5
    with pytest.raises(ValueError, match="sentence 1 of the batch"):
        aug.batch(["the dog", " "])
