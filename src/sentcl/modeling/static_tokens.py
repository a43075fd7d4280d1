"""A static model's tokens, fast: the ids the Rust tokenizer gives (no special tokens), as one flat array.

Encoding with a static model is a tokenizer and a table look-up, so the tokenizer is most of the time: the Rust
tokenizer spends about 25 µs on an STS-B sentence, mostly tracking character offsets that a static model never
reads. For the BERT pipeline (``BertNormalizer``, ``BertPreTokenizer``, ``WordPiece``: the tokenizers of BERT,
MiniLM and their students) a word's pieces do not depend on its neighbours: the pre-tokenizer cuts the
normalised text at whitespace and around every punctuation character, and WordPiece splits each word alone. So
on text where the normaliser only (maybe) lowercases - printable ASCII plus tab and newlines, with no added
token such as ``[MASK]`` in it - the words are ``[a-z0-9]+`` runs and single punctuation characters, and

- a word that is itself a vocabulary entry, within ``max_input_chars_per_word`` characters, is that one token
  (WordPiece applies its length rule first, then takes the longest match first);
- any other word is split by WordPiece's greedy longest-match-first loop, written here (``wordpiece``: the
  Rust model's loop, its ``##`` prefix, ``[UNK]`` for a word with an unmatched piece or over
  ``max_input_chars_per_word`` characters);
- every text outside that set goes to the Rust tokenizer (``encode_batch_fast``), in one call per batch.

The Rust tokenizer costs about 25 µs a call even for one word, which is why unknown words are not sent to it.
Nothing is remembered between calls beyond the vocabulary's own words, so the speed does not depend on having
seen the text before. Any other tokenizer pipeline takes the Rust path for every text. ``TokenRows`` carries
the result: the flat ids (T,) and each text's token count (N,), cut at a length limit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from sentcl.modeling.tokenizer_checks import quiet_rust_panics

_ASCII_PUNCT = r"!-/:-@\[-`{-~"  # the 32 ASCII punctuation characters, as a character-class body
# controls that BertNormalizer removes rather than treats as a space (tab, newline and CR are spaces)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class TokenRows:
    """Texts as token ids: ``ids`` (T,) int64, text after text; ``lengths`` (N,) int64, each text's count."""

    ids: np.ndarray
    lengths: np.ndarray

    @classmethod
    def of(cls, lists: Sequence[Sequence[int]]) -> TokenRows:
        """Id lists, one a text, as rows."""
        lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))  # (N,)
        return cls(np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(lengths.sum())), lengths)

    @property
    def offsets(self) -> np.ndarray:
        """Each text's first position in ``ids`` (N,)."""
        return np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)  # (N,)

    def cut(self, limit: int) -> TokenRows:
        """Each text's first ``limit`` tokens."""
        if not len(self.lengths) or int(self.lengths.max()) <= limit:
            return self
        position = np.arange(len(self.ids)) - np.repeat(self.offsets, self.lengths)  # (T,) index in its text
        return TokenRows(self.ids[position < limit], np.minimum(self.lengths, limit))

    def lists(self) -> list[list[int]]:
        """Each text's ids as a list (the slow form, for callers that need one)."""
        ends = np.cumsum(self.lengths)
        return [self.ids[e - n : e].tolist() for e, n in zip(ends, self.lengths, strict=True)]


@dataclass(frozen=True)
class WordPiece:
    """A WordPiece model's settings (tokenizer.json's ``model``) and its greedy longest-match-first split."""

    vocab: dict[str, int]
    unk: int
    prefix: str
    max_chars: int

    def __call__(self, word: str) -> tuple[int, ...]:
        """The ids of one pre-tokenized word, as the Rust WordPiece model gives them."""
        if len(word) > self.max_chars:
            return (self.unk,)
        pieces, start = [], 0
        while start < len(word):
            for end in range(len(word), start, -1):  # the longest piece first
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    pieces.append(self.vocab[piece])
                    start = end
                    break
            else:  # no piece matches at ``start``: the whole word is unknown
                return (self.unk,)
        return tuple(pieces)


def _bert_pipeline(rust: Any) -> tuple[bool, WordPiece] | None:  # noqa: ANN401 - a tokenizers.Tokenizer
    """(BertNormalizer's ``lowercase``, the WordPiece model) when the tokenizer is BertNormalizer +
    BertPreTokenizer + WordPiece with its unknown token in the vocabulary; else None."""
    spec = json.loads(rust.to_str())
    norm, pre, model = spec.get("normalizer") or {}, spec.get("pre_tokenizer") or {}, spec.get("model") or {}
    if norm.get("type") != "BertNormalizer" or pre.get("type") != "BertPreTokenizer":
        return None
    vocab = rust.get_vocab()
    if model.get("type") != "WordPiece" or model.get("unk_token") not in vocab:
        return None
    wordpiece = WordPiece(
        vocab,
        vocab[model["unk_token"]],
        str(model.get("continuing_subword_prefix", "##")),
        int(model.get("max_input_chars_per_word", 100)),
    )
    return bool(norm.get("lowercase", True)), wordpiece


class StaticTokenizer:
    """``ids(texts)``: the Rust tokenizer's ids of ``texts`` without special tokens, as ``TokenRows``."""

    def __init__(self, rust: Any) -> None:  # noqa: ANN401 - a tokenizers.Tokenizer, padding and truncation off
        self.rust = rust
        bert = _bert_pipeline(rust)
        self.fast = bert is not None
        self.lowercase, self._wordpiece = bert if bert is not None else (False, None)
        letters = "a-z0-9" if self.lowercase else "A-Za-z0-9"
        self._word = re.compile(rf"[{letters}]+|[{_ASCII_PUNCT}]")
        added = [t.content for t in rust.get_added_tokens_decoder().values() if t.content]
        self._added = (
            re.compile("|".join(re.escape(a) for a in added), re.IGNORECASE if self.lowercase else 0)
            if added
            else None
        )
        vocab = self._wordpiece.vocab if self._wordpiece is not None else {}
        limit = self._wordpiece.max_chars if self._wordpiece is not None else 0
        # a vocabulary word is its own token only within WordPiece's length rule, which comes first: a longer
        # one is [UNK], as the Rust model gives it
        self._words = {
            w: (i,)
            for w, i in vocab.items()
            if self._word.fullmatch(w) and w not in added and len(w) <= limit
        }

    def _plain(self, text: str) -> bool:
        """Whether ``text`` splits into words by the regular expression exactly as the Rust tokenizer would."""
        return (
            text.isascii()
            and _CONTROL.search(text) is None
            and (self._added is None or self._added.search(text) is None)
        )

    def _rust_ids(self, texts: list[str]) -> list[tuple[int, ...]]:
        with quiet_rust_panics():
            return [tuple(e.ids) for e in self.rust.encode_batch_fast(texts, add_special_tokens=False)]

    def ids(self, texts: Sequence[str]) -> TokenRows:
        """The token ids of ``texts`` (no special tokens, no truncation)."""
        if not self.fast:
            pieces = [[row] for row in self._rust_ids(list(texts))]
        else:
            plain = [self._plain(t) for t in texts]
            other = [t for t, ok in zip(texts, plain, strict=True) if not ok]
            whole = iter(self._rust_ids(other) if other else [])  # texts the Rust tokenizer reads
            known, split = self._words, self._wordpiece
            pieces = [
                [known.get(w) or split(w) for w in self._word.findall(t.lower() if self.lowercase else t)]
                if ok
                else [next(whole)]
                for t, ok in zip(texts, plain, strict=True)
            ]
        lengths = np.fromiter(
            (sum(map(len, row)) for row in pieces), dtype=np.int64, count=len(pieces)
        )  # (N,)
        flat = chain.from_iterable(chain.from_iterable(pieces))
        return TokenRows(np.fromiter(flat, dtype=np.int64, count=int(lengths.sum())), lengths)  # (T,)


__all__ = ["StaticTokenizer", "TokenRows"]
