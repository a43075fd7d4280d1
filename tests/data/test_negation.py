"""The rule-based negator on a table of English sentences, and the user's negation file."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentcl.data.negation import negate, read_negations
from sentcl.data.readers import DataFormatError

TABLE = [
    # auxiliary / copula + not
    ("A man is playing a guitar.", "A man is not playing a guitar."),
    ("The dogs are running in the park.", "The dogs are not running in the park."),
    ("She can swim.", "She can not swim."),
    ("She has finished her work.", "She has not finished her work."),
    ("It will rain tomorrow.", "It will not rain tomorrow."),
    ("You should see this.", "You should not see this."),
    ("The children were tired.", "The children were not tired."),
    # an existing negation is removed
    ("He isn't happy.", "He is happy."),
    ("They don't like apples.", "They do like apples."),
    ("He is not a doctor.", "He is a doctor."),
    ("We won't stay.", "We will stay."),
    ("Nobody came to the party.", "Somebody came to the party."),
    ("He never lies.", "He always lies."),
    ("There is no milk.", "There is some milk."),
    # do-support before a main verb
    ("The cat sleeps on the sofa.", "The cat does not sleep on the sofa."),
    ("The company reported strong earnings.", "The company did not report strong earnings."),
    ("I like music.", "I do not like music."),
    ("The children played outside.", "The children did not play outside."),
    ("We went to the market.", "We did not go to the market."),
    ("John studies physics.", "John does not study physics."),
    ("The bird flies over the river.", "The bird does not fly over the river."),
    ("The stock price rises.", "The stock price does not rise."),
    ("A woman slices an onion.", "A woman does not slice an onion."),
    ("The team won the game.", "The team did not win the game."),
    ("The man with glasses reads.", "The man with glasses does not read."),
    ("South Australia has a unique position.", "South Australia does not have a unique position."),
    ("They had 20 horses.", "They did not have 20 horses."),
    ("In 1850 records show growth.", "it is not true that in 1850 records show growth."),
    ("Apprentices and others enjoyed books.", "Apprentices and others did not enjoy books."),
    # no verb the rules recognise
    ("Music.", "it is not true that music."),
    ("Two men watch the news.", "it is not true that two men watch the news."),
]


@pytest.mark.parametrize(("sentence", "expected"), TABLE)
def test_negation_table(sentence: str, expected: str) -> None:
    assert negate(sentence) == expected


def test_negation_is_deterministic_and_total() -> None:
    sentences = [s for s, _ in TABLE] + ["", "!!", "OK"]
    assert [negate(s) for s in sentences] == [negate(s) for s in sentences]
    assert all(negate(s) != s for s in sentences if any(c.isalpha() for c in s))


def test_negation_file(tmp_path: Path) -> None:
    good = tmp_path / "neg.tsv"
    good.write_text("a man sleeps\ta man does not sleep\n\nit rains\tit does not rain\n", encoding="utf-8")
    assert read_negations(good) == {"a man sleeps": "a man does not sleep", "it rains": "it does not rain"}
    bad = tmp_path / "bad.tsv"
    bad.write_text("a man sleeps\ta man does not sleep\nno tab on this line\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad\.tsv:2: expected 'sentence<TAB>negation'"):
        read_negations(bad)
    empty_field = tmp_path / "empty.tsv"
    empty_field.write_text("a man sleeps\t \n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"empty\.tsv:1:"):
        read_negations(empty_field)
    twice = tmp_path / "twice.tsv"
    twice.write_text("x y\tnot x y\nx y\tx y not\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"twice\.tsv:2: .* another negation"):
        read_negations(twice)
    with pytest.raises(FileNotFoundError, match="negation file"):
        read_negations(tmp_path / "missing.tsv")
