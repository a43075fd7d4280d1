"""Whole-word rows for a static student: corpus words that the teacher's WordPiece splits, each given a row.

Model2Vec's ``distill(vocabulary=...)`` and tokenlearn add the words of a corpus to the tokenizer, so a word
that WordPiece would split into pieces (``revision ##ist``) gets a vector of its own: the teacher's output for
the word alone, as every token's is. Our version, for ``bench.static_students``' ``words`` variant:

- :func:`split_words`: the corpus words (the tokenizer's own normaliser and pre-tokenizer) outside the
  vocabulary, the most frequent first, seen at least ``min_count`` times;
- :func:`with_words`: the tokenizer with those words appended to its WordPiece vocabulary (ids from V on). As
  WordPiece matches the longest piece first, a whole added word becomes its one id, and any other text is
  tokenised as before; the result is still a plain ``tokenizer.json``, so a folder could ship it as is;
- :func:`word_vectors`: the teacher's pooled vector of each word alone (``[CLS] pieces [SEP]``, the teacher's
  own pooling, not normalised: what ``static_distill.token_vectors`` gives a token).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np


def split_words(rust: Any, sentences: Sequence[str], limit: int, min_count: int = 2) -> list[str]:  # noqa: ANN401
    """Up to ``limit`` words of ``sentences`` that are not vocabulary tokens (so WordPiece splits them), the most
    frequent first; a word of one character or without a letter is left out."""
    normalize, split = rust.normalizer.normalize_str, rust.pre_tokenizer.pre_tokenize_str
    counts = Counter(word for s in sentences for word, _ in split(normalize(s)))
    vocab = rust.get_vocab()
    found = [
        w
        for w, c in counts.most_common()
        if c >= min_count and w not in vocab and len(w) > 1 and any(ch.isalpha() for ch in w)
    ]
    return found[:limit]


def with_words(rust: Any, words: Sequence[str]) -> Any:  # noqa: ANN401 - a tokenizers.Tokenizer
    """A copy of ``rust`` whose WordPiece vocabulary also holds ``words``, with ids from its size on."""
    from tokenizers import Tokenizer

    spec = json.loads(rust.to_str())
    vocab = spec["model"]["vocab"]
    start = max(vocab.values()) + 1
    vocab.update({w: start + i for i, w in enumerate(words)})
    out = Tokenizer.from_str(json.dumps(spec))
    out.no_padding()  # ids of whole texts, as the static model reads them
    out.no_truncation()
    return out


def word_vectors(encoder: Any, words: Sequence[str], batch_size: int = 256) -> np.ndarray:  # noqa: ANN401
    """The teacher's pooled, unnormalised vector of each word alone: (W, H) float32."""
    if not words:
        return np.zeros((0, encoder.embedding_dim), np.float32)
    normalize = getattr(encoder, "normalize_output", None)
    if normalize is not None:
        encoder.normalize_output = False  # the pooled output, as the tokens' rows take it
    try:
        out = encoder.encode(list(words), batch_size=batch_size, normalize=False)  # (W, H)
    finally:
        if normalize is not None:
            encoder.normalize_output = normalize
    return np.asarray(out, dtype=np.float32)
