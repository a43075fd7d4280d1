"""Word-level augmentations on strings: the discrete positive views of SimCSE's Table 1.

A sentence is split on whitespace into n words and re-joined with single spaces. The number of words a
rate k changes is count-based (not a Bernoulli draw per word), so the promised fraction is exact:

    c = clamp(round_half_up(k * n), 1 if k > 0 else 0, n - 1)     (deletions: at least one word stays)

Each augmentation owns a ``random.Random`` (an int seeds it; None draws a seed from the global ``random``),
so a seed fixes the sequence of outputs. An empty (all-whitespace) sentence is an error, never an output.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Collection, Sequence

import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer, PreTrainedTokenizerBase

from sentcl.data.augment.tokens import MaskedLMReplacement, SpecialIds
from sentcl.data.augment.wordnet import WordNet
from sentcl.files.paths import model_load_error, resolve_model_path
from sentcl.registry import Registry

TEXT_AUGMENTATIONS: Registry[TextAugmentation] = Registry("text augmentation")
# Function words that synonym replacement leaves alone (EDA-style).
# fmt: off
STOPWORDS = frozenset((
    "a", "an", "the", "and", "or", "but", "if", "of", "at", "by", "for", "with", "about", "to", "from",
    "in", "on", "off", "out", "over", "under", "up", "down", "into", "onto", "is", "am", "are", "was",
    "were", "be", "been", "being", "have", "has", "had", "do", "does", "did", "will", "would", "shall",
    "should", "can", "could", "may", "might", "must", "i", "me", "my", "we", "us", "our", "you", "your",
    "he", "him", "his", "she", "her", "it", "its", "they", "them", "their", "this", "that", "these",
    "those", "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "not", "no", "nor",
    "so", "than", "too", "very", "just", "also", "as", "all", "any", "both", "each", "few", "more", "most",
    "other", "some", "such", "only", "own", "same", "there", "here", "then", "once", "again",
))
# fmt: on
_WORD_PARTS = re.compile(r"^(\W*)(.*?)(\W*)$", re.DOTALL)


def as_random(seed: int | random.Random | None) -> random.Random:
    if isinstance(seed, random.Random):
        return seed
    return random.Random(random.getrandbits(64) if seed is None else seed)


def change_count(rate: float, n: int, keep_one: bool = True) -> int:
    """c = clamp(round_half_up(rate * n), 1 if rate > 0, n - 1 if keep_one else n); 0 when n = 0."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must lie in [0, 1], got {rate}")
    c = math.floor(rate * n + 0.5 + 1e-9)
    if rate > 0:
        c = max(c, 1)
    return max(0, min(c, n - 1 if keep_one else n))


def split_words(sentence: str) -> list[str]:
    words = sentence.split()
    if not words:
        raise ValueError(f"cannot augment an empty sentence: {sentence!r}")
    return words


class TextAugmentation:
    """Base: ``aug(sentence) -> sentence``; ``aug.batch(sentences)`` maps it over a list."""

    def __init__(self, seed: int | random.Random | None = None) -> None:
        self.rng = as_random(seed)

    def __call__(self, sentence: str) -> str:
        return " ".join(self.apply(split_words(sentence)))

    def apply(self, words: list[str]) -> list[str]:
        raise NotImplementedError

    def batch(self, sentences: Sequence[str]) -> list[str]:
        out = []
        for i, sentence in enumerate(sentences):
            try:
                out.append(self(sentence))
            except ValueError as err:
                raise ValueError(f"sentence {i} of the batch: {err}") from err
        return out


@TEXT_AUGMENTATIONS.register("crop")
class Crop(TextAugmentation):
    """Crop k: keep a uniformly placed contiguous span of n - c words, c = round_half_up(k n) (kept >= 1)."""

    def __init__(self, k: float = 0.1, seed: int | random.Random | None = None) -> None:
        super().__init__(seed)
        change_count(k, 1)  # validates k
        self.k = k

    def apply(self, words: list[str]) -> list[str]:
        cut = change_count(self.k, len(words))
        start = self.rng.randint(0, cut)
        return words[start : start + len(words) - cut]


@TEXT_AUGMENTATIONS.register("word_deletion")
class WordDeletion(TextAugmentation):
    """Word deletion k: delete exactly c = round_half_up(k n) uniformly chosen words (at least one kept)."""

    def __init__(self, k: float = 0.1, seed: int | random.Random | None = None) -> None:
        super().__init__(seed)
        change_count(k, 1)  # validates k
        self.k = k

    def count(self, n: int) -> int:
        return change_count(self.k, n)

    def apply(self, words: list[str]) -> list[str]:
        dropped = set(self.rng.sample(range(len(words)), self.count(len(words))))
        return [w for i, w in enumerate(words) if i not in dropped]


@TEXT_AUGMENTATIONS.register("delete_one_word")
class DeleteOneWord(WordDeletion):
    """Delete one uniformly chosen word (none from a one-word sentence)."""

    def __init__(self, seed: int | random.Random | None = None) -> None:
        super().__init__(0.0, seed)

    def count(self, n: int) -> int:
        return min(1, n - 1)


@TEXT_AUGMENTATIONS.register("synonym_replacement")
class SynonymReplacement(TextAugmentation):
    """Synonym replacement k: c = round_half_up(k n) words -> a uniform WordNet synonym.

    Candidates are the words (punctuation stripped) outside ``stopwords`` that have a synonym; when fewer
    than c exist, all of them are replaced, so the count is min(c, #candidates). Surrounding punctuation
    and an initial capital are kept; multi-word synonyms ("motor car") are inserted with a space.
    """

    def __init__(
        self,
        k: float = 0.1,
        wordnet: WordNet | str | None = None,
        pos: Sequence[str] = ("n", "v", "a", "r"),
        stopwords: Collection[str] = STOPWORDS,
        seed: int | random.Random | None = None,
    ) -> None:
        super().__init__(seed)
        change_count(k, 1)  # validates k
        self.k = k
        self.wordnet = wordnet if isinstance(wordnet, WordNet) else WordNet(wordnet, pos=pos)
        self.stopwords = frozenset(w.lower() for w in stopwords)
        self._cache: dict[str, list[str]] = {}

    def synonyms(self, core: str) -> list[str]:
        key = core.lower()
        if key not in self._cache:
            self._cache[key] = [] if not key or key in self.stopwords else self.wordnet.synonyms(key)
        return self._cache[key]

    def apply(self, words: list[str]) -> list[str]:
        parts = [_WORD_PARTS.match(w).groups() for w in words]  # type: ignore[union-attr]  # always matches
        candidates = [i for i, (_, core, _) in enumerate(parts) if self.synonyms(core)]
        chosen = self.rng.sample(
            candidates, min(change_count(self.k, len(words), keep_one=False), len(candidates))
        )
        out = list(words)
        for i in sorted(chosen):
            lead, core, trail = parts[i]
            synonym = self.rng.choice(self.synonyms(core))
            if core[:1].isupper():
                synonym = synonym[:1].upper() + synonym[1:]
            out[i] = lead + synonym + trail
        return out


@TEXT_AUGMENTATIONS.register("mlm_replacement")
class MLMReplacement(TextAugmentation):
    """MLM replacement k (SimCSE Table 1, "MLM 15%"): :class:`MaskedLMReplacement` on wordpieces, then decoded.

    ``model`` is a masked-LM module or a name/folder for ``AutoModelForMaskedLM`` (its tokenizer is loaded
    beside it when ``tokenizer`` is None). The output is the tokenizer's detokenisation (an uncased
    tokenizer lower-cases it); [UNK] pieces are kept. Use ``batch`` for speed: one forward per ``batch_size``.
    """

    def __init__(
        self,
        k: float = 0.15,
        model: torch.nn.Module | str = "bert-base-uncased",
        tokenizer: PreTrainedTokenizerBase | None = None,
        sample: bool = False,
        temperature: float = 1.0,
        exclude_original: bool = True,
        batch_size: int = 64,
        generator: torch.Generator | int | None = None,
    ) -> None:
        super().__init__(None)
        if isinstance(model, str):
            path = resolve_model_path(model)
            try:
                model, info = AutoModelForMaskedLM.from_pretrained(path, output_loading_info=True)
                tokenizer = tokenizer or AutoTokenizer.from_pretrained(path)
            except OSError as err:
                raise model_load_error(path, err) from err
            prefix = model.base_model_prefix
            missing = [k for k in info["missing_keys"] if not k.startswith(prefix + ".")]
            if missing:  # a random head would "predict" noise: refuse instead of degrading silently
                raise ValueError(
                    f"mlm_replacement: checkpoint {path} has no masked-LM head weights (missing {missing[0]}, ...); "
                    "pass a masked-LM checkpoint such as bert-base-uncased (data.mlm_augmentation_model)"
                )
        if tokenizer is None:
            raise ValueError("MLMReplacement needs the tokenizer that goes with the masked-LM model")
        self.tokenizer = tokenizer
        self.special = SpecialIds.from_tokenizer(tokenizer)
        self.max_length = int(getattr(getattr(model, "config", None), "max_position_embeddings", 512))
        self.batch_size = batch_size
        self.replace = MaskedLMReplacement(
            k, model, self.special, sample, temperature, exclude_original, generator
        )

    def __call__(self, sentence: str) -> str:
        return self.batch([sentence])[0]

    def batch(self, sentences: Sequence[str]) -> list[str]:
        for i, sentence in enumerate(sentences):
            if not sentence.split():
                raise ValueError(f"sentence {i} of the batch: cannot augment an empty sentence: {sentence!r}")
        out: list[str] = []
        for begin in range(0, len(sentences), self.batch_size):
            chunk = list(sentences[begin : begin + self.batch_size])
            enc = self.tokenizer(chunk, padding=True, return_tensors="pt")
            if enc["input_ids"].shape[1] > self.max_length:
                longest = begin + int(enc["attention_mask"].sum(dim=1).argmax())
                raise ValueError(
                    f"sentence {longest} of the batch has more than {self.max_length} tokens, the model's limit"
                )
            view = self.replace(enc["input_ids"], enc["attention_mask"])
            keep = view.attention_mask.bool() & ~torch.isin(
                view.input_ids, torch.tensor(self.special.structural)
            )  # (N, L)
            for ids, row in zip(view.input_ids, keep, strict=True):
                tokens = self.tokenizer.convert_ids_to_tokens(ids[row].tolist())
                out.append(self.tokenizer.convert_tokens_to_string(tokens))
        return out
