"""A static model distilled from a sentence encoder: Model2Vec's method, our implementation.

Tulkens & van Dongen, *Model2Vec: Fast State-of-the-Art Static Embeddings* (MinishLab, 2024): every token of
the teacher's vocabulary goes through the teacher alone, and the teacher's output for it is that token's
vector; PCA reduces the vectors to the chosen width; each row is then scaled by its token's SIF weight
(Arora, Liang & Ma, *A Simple but Tough-to-Beat Baseline for Sentence Embeddings*, ICLR 2017):
``a / (a + p(w))``, with ``p(w)`` the token's unigram probability. A sentence's vector is the mean of its
tokens' rows (``sentcl.modeling.static``).

Here:

- a token is encoded as the teacher's tokenizer frames one token (``[CLS] t [SEP]`` for BERT), with the
  teacher's own pooler, before its final normalisation (the pooled output, as Model2Vec takes it);
- tokens that match the recipe's ``skip_pattern`` (BERT's ``[unusedN]`` slots, which no text produces) get a zero row and
  stay out of the PCA fit, as Model2Vec removes them;
- ``p(w)`` is either Zipf's law over the vocabulary order (``zipf``: Model2Vec's estimate, rank r has
  probability proportional to 1 / r) or the token counts of a corpus with add-one smoothing (``corpus``:
  SIF's own definition, the unigram frequency of a corpus).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from sentcl.modeling.postprocess.pca import PCA, fit_pca

TOKEN_BATCH = 512


@dataclass(frozen=True)
class StaticTable:
    """The distilled token vectors (V, k), the PCA that reduced them and the per-token weights (V,)."""

    table: np.ndarray  # (V, k) float32, weights applied
    pca: PCA
    weights: np.ndarray  # (V,)
    kept: np.ndarray  # (V,) bool: tokens encoded (not matched by SKIP_PATTERN)


def special_frame(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The special tokens the tokenizer puts before and after a text's tokens ([CLS] and [SEP] for BERT)."""
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    framed = tokenizer("a")["input_ids"]
    for start in range(len(framed) - len(plain) + 1):
        if framed[start : start + len(plain)] == plain:
            return list(framed[:start]), list(framed[start + len(plain) :])
    raise ValueError(
        f"cannot find the tokens of a text inside its framed ids {framed} (tokenizer {tokenizer!r})"
    )


def framed_ids(tokenizer: Any, token_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Each token framed as the tokenizer frames a one-token text: ids (V, L) and attention mask (V, L)."""
    prefix, suffix = special_frame(tokenizer)
    ids = np.array([[*prefix, int(t), *suffix] for t in token_ids], dtype=np.int64)  # (V, L)
    return ids, np.ones_like(ids)  # (V, L): every row has the same length, no padding


def check_token_teacher(encoder: Any, teacher: str) -> None:
    """Refuse a teacher that cannot run one token at a time (a static model: its vectors are a table already),
    naming it, before any work."""
    if getattr(encoder, "session", None) is None and not isinstance(encoder, torch.nn.Module):
        what = (
            "a static model (a table of token vectors)"
            if hasattr(encoder, "table")
            else type(encoder).__name__
        )
        raise ValueError(
            f"TEACHER {teacher} is {what}; a static student is distilled from a transformer teacher (a PyTorch "
            "or ONNX model folder, hub id or name) that runs each token through its layers"
        )


def _run_batch(encoder: Any, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The teacher's pooled output of framed ids (B, L) -> (B, H), before its final normalisation."""
    session = getattr(encoder, "session", None)
    if session is not None:  # an exported ONNX teacher: the graph's output as it is
        return np.asarray(session.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})[0])
    if not isinstance(encoder, torch.nn.Module):
        raise TypeError(f"cannot run token ids through a {type(encoder).__name__}: a PyTorch or ONNX teacher")
    with torch.inference_mode():
        out = encoder(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask))
    return out.float().numpy()


def token_vectors(encoder: Any, token_ids: Sequence[int], batch_size: int = TOKEN_BATCH) -> np.ndarray:
    """The teacher's vector of each token alone: (len(token_ids), H) float32."""
    if isinstance(encoder, torch.nn.Module):
        encoder.eval()  # no dropout
    normalize = getattr(encoder, "normalize_output", None)
    if normalize is not None:
        encoder.normalize_output = False  # the pooled output, as Model2Vec takes it
    try:
        parts = []
        for start in range(0, len(token_ids), batch_size):
            ids, mask = framed_ids(encoder.tokenizer, token_ids[start : start + batch_size])
            parts.append(_run_batch(encoder, ids, mask))
    finally:
        if normalize is not None:
            encoder.normalize_output = normalize
    return np.concatenate(parts).astype(np.float32)  # (V, H)


def zipf_probabilities(vocab_size: int) -> np.ndarray:
    """Model2Vec's estimate: token id r (vocabulary order) has probability proportional to 1 / (r + 1)."""
    inverse = 1.0 / np.arange(1, vocab_size + 1, dtype=np.float64)  # (V,)
    return inverse / inverse.sum()


def corpus_probabilities(token_lists: Iterable[Sequence[int]], vocab_size: int) -> np.ndarray:
    """Unigram probabilities of the tokens of a tokenised corpus, add-one smoothed: (V,)."""
    counts = np.ones(vocab_size, dtype=np.float64)  # (V,)
    for ids in token_lists:
        np.add.at(counts, np.asarray(ids, dtype=np.int64), 1.0)
    return counts / counts.sum()


def sif_weights(probabilities: np.ndarray, a: float) -> np.ndarray:
    """Arora et al.'s weight a / (a + p(w)) of each token: (V,)."""
    if a <= 0:
        raise ValueError(f"the SIF coefficient a must be positive, got {a}")
    return a / (a + probabilities)


def kept_tokens(tokenizer: Any, pattern: str | None) -> np.ndarray:
    """(V,) bool: the tokens to encode (every one but those ``pattern`` matches); a pattern that leaves none
    is refused, naming the recipe's key."""
    vocab_size = len(tokenizer)
    kept = np.ones(vocab_size, dtype=bool)
    if pattern:
        regex = re.compile(pattern)
        for token, index in tokenizer.get_vocab().items():
            if index < vocab_size and regex.fullmatch(token):
                kept[index] = False
    if not kept.any():
        raise ValueError(
            f"skip_pattern {pattern!r} matches every one of the vocabulary's {vocab_size} tokens: nothing is left "
            "to distil; give a pattern that matches only the tokens to leave out (the default: BERT's [unusedN])"
        )
    return kept


def distill_table(
    encoder: Any,
    dim: int,
    weights: np.ndarray | None,
    skip_pattern: str | None = None,
    batch_size: int = TOKEN_BATCH,
    option: str = "dim",
) -> StaticTable:
    """Model2Vec's distillation of ``encoder``: token vectors -> PCA to ``dim`` -> rows times ``weights`` (V,)
    (None: all ones). Rows of skipped tokens are zero. ``option``: the recipe key that gave ``dim``, which an
    error names."""
    kept = kept_tokens(encoder.tokenizer, skip_pattern)
    vocab_size = len(kept)
    ids = np.flatnonzero(kept)
    vectors = token_vectors(encoder, ids.tolist(), batch_size)  # (V', H)
    pca = fit_pca(vectors, dim, where=f"the {len(ids)} token vectors", option=option)
    table = np.zeros((vocab_size, dim), dtype=np.float32)  # (V, k)
    table[ids] = pca.apply(vectors).astype(np.float32)  # (V', k)
    w = np.ones(vocab_size) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (vocab_size,):
        raise ValueError(f"{w.shape[0]} token weights for a vocabulary of {vocab_size}")
    table *= w[:, None].astype(np.float32)  # (V, k)
    return StaticTable(table, pca, w, kept)


__all__ = [
    "StaticTable",
    "corpus_probabilities",
    "distill_table",
    "framed_ids",
    "special_frame",
    "kept_tokens",
    "sif_weights",
    "token_vectors",
    "zipf_probabilities",
]
