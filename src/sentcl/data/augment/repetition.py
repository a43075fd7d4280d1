"""Word repetition (ESimCSE, Wu et al. 2022, section 3.1): the positive view repeats a few words in place.

For a sentence of n words x = (x_1, ..., x_n) (whitespace split) and the maximum repetition rate
``dup_rate`` (0.32 for BERT-base), the paper draws

    dup_len ~ Uniform{0, 1, ..., max(2, int(dup_rate * n))}

then ``dup_len`` distinct positions uniformly at random, and writes each chosen word twice, in place:
"I like this apple" -> "I I like this apple apple". ``int`` truncates (as Python's int()), so a 5-word
sentence at 0.32 repeats 0, 1 or 2 words (max(2, 1) = 2). ``dup_len`` never exceeds n (a one-word sentence
repeats at most its one word). The repetition changes the sentence's length without changing its meaning,
so that the positive pair no longer shares the length signal (the paper's motivation).

Unit. The paper's text says "words"; the authors' code also has a subword variant (``--dup_type``, their
section 5.2). sentcl repeats whitespace words and tokenises the result, so a repeated word is repeated with
all its word pieces; the tokenizer then truncates the longer view at ``model.max_length`` like any view.
"""

from __future__ import annotations

import random

from sentcl.data.augment.text import TextAugmentation


def repetition_count_bound(dup_rate: float, n: int) -> int:
    """The largest dup_len the paper draws for n words: min(n, max(2, int(dup_rate * n)))."""
    return min(n, max(2, int(dup_rate * n)))


class WordRepetition(TextAugmentation):
    """ESimCSE's word repetition: dup_len ~ U{0..max(2, int(dup_rate * n))} words, each written twice."""

    def __init__(self, dup_rate: float = 0.32, seed: int | random.Random | None = None) -> None:
        super().__init__(seed)
        if not 0.0 <= dup_rate <= 1.0:
            raise ValueError(f"dup_rate must lie in [0, 1], got {dup_rate}")
        self.dup_rate = dup_rate

    def apply(self, words: list[str]) -> list[str]:
        dup_len = self.rng.randint(0, repetition_count_bound(self.dup_rate, len(words)))
        repeated = set(self.rng.sample(range(len(words)), dup_len))
        out: list[str] = []
        for i, word in enumerate(words):
            out.extend((word, word) if i in repeated else (word,))
        return out
