"""The adaptation benchmark's domains: unlabelled training text and a labelled test of the same domain, all from
the offline data folder (``$SENTCL_DATA``).

* ``stsb-captions``, ``stsb-news``: STS-B by genre. The training text is every distinct sentence of the train
  split's pairs of that genre (scores dropped), in file order; the test is the test split's pairs of the same
  genre, scored as STS is (100 · Spearman of the cosine against the gold score).
* ``cr``: product-review sentiment (SentEval's CR, 3,775 sentences). A fixed stratified half split
  (``SPLIT_SEED``): in each class, a seeded permutation's first half is the training text (labels dropped) and
  the other half the held-out side, scored with SentEval's own CR protocol (nested k-fold logistic regression,
  ``sentcl.evaluation.transfer.transfer_accuracy``). The encoder never sees a held-out sentence.
* ``trec``: question types (SentEval's TREC). The training text is the sentences of TREC's training file
  (train_5500, labels dropped); the test is SentEval's TREC protocol as it stands (the classifier learns the
  training file's labels, L2 by k-fold CV, and is scored on the held-out TREC_10 questions, which the encoder
  never sees).

Both classification tasks run SentEval's protocol in SimCSE's ``fasttest`` settings (5 folds, RMSprop; the
``FAST`` flag): on this shared 2-core machine the 10-fold ``test`` settings would take most of the budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.evaluation.senteval_readers import LabelledSentences, read_binary_task, read_stsb_genre, read_trec
from sentcl.evaluation.sts import pairs_correlation
from sentcl.evaluation.transfer import transfer_accuracy
from sentcl.types import EncodeFn

#: the seed of CR's half split (fixed: every method, seed and run sees the same halves)
SPLIT_SEED = 2021
#: SentEval's protocol in SimCSE's fasttest settings (5 folds, RMSprop) for the classification domains
FAST = True


@dataclass(frozen=True)
class Domain:
    name: str
    #: what the score is, for the page
    metric: str
    #: how the unlabelled text and the labelled test are made, one line for the page
    split: str
    sentences: Callable[[Path], list[str]]
    score: Callable[[EncodeFn, Path], dict[str, Any]]


def _distinct(texts: list[str]) -> list[str]:
    return list(dict.fromkeys(t for t in texts if t.strip()))


def _stsb(genre: str) -> tuple[Callable[[Path], list[str]], Callable[[EncodeFn, Path], dict[str, Any]]]:
    def sentences(data_dir: Path) -> list[str]:
        return _distinct([s for a, b, _ in read_stsb_genre(data_dir, "train", genre) for s in (a, b)])

    def score(encode: EncodeFn, data_dir: Path) -> dict[str, Any]:
        result = pairs_correlation(encode, read_stsb_genre(data_dir, "test", genre), f"STS-B test {genre}")
        return {"score": result["spearman"], **result}

    return sentences, score


def halves(data_dir: Path, task: str) -> tuple[LabelledSentences, LabelledSentences]:
    """(training half, held-out half) of a binary SentEval task, stratified by class, seeded by SPLIT_SEED."""
    data = read_binary_task(data_dir, task)
    rng = np.random.RandomState(SPLIT_SEED)
    train_idx: list[int] = []
    held_idx: list[int] = []
    for label in np.unique(data.labels):
        members = rng.permutation(np.flatnonzero(data.labels == label))
        train_idx += members[: len(members) // 2].tolist()
        held_idx += members[len(members) // 2 :].tolist()

    def part(idx: list[int]) -> LabelledSentences:
        idx = sorted(idx)
        return LabelledSentences([data.texts[i] for i in idx], data.labels[np.asarray(idx, dtype=np.int64)])

    return part(train_idx), part(held_idx)


def _cr_sentences(data_dir: Path) -> list[str]:
    return _distinct(halves(data_dir, "CR")[0].texts)


def _cr_score(encode: EncodeFn, data_dir: Path) -> dict[str, Any]:
    result = transfer_accuracy(encode, halves(data_dir, "CR")[1], fast=FAST)
    return {"score": result["acc"], **result}


def _trec_sentences(data_dir: Path) -> list[str]:
    return _distinct(read_trec(data_dir)["train"].texts)


def _trec_score(encode: EncodeFn, data_dir: Path) -> dict[str, Any]:
    trec = read_trec(data_dir)
    result = transfer_accuracy(encode, trec["train"], trec["test"], fast=FAST)
    return {"score": result["acc"], **result}


DOMAINS: dict[str, Domain] = {
    "stsb-captions": Domain(
        "stsb-captions",
        "Spearman x 100",
        "STS-B main-captions: train split's sentences (no scores) -> test split's 625 pairs",
        *_stsb("main-captions"),
    ),
    "stsb-news": Domain(
        "stsb-news",
        "Spearman x 100",
        "STS-B main-news: train split's sentences (no scores) -> test split's 500 pairs",
        *_stsb("main-news"),
    ),
    "cr": Domain(
        "cr",
        "accuracy %",
        f"CR: stratified half (seed {SPLIT_SEED}) unlabelled -> SentEval's CR protocol (fasttest) on the other half",
        _cr_sentences,
        _cr_score,
    ),
    "trec": Domain(
        "trec",
        "accuracy %",
        "TREC: train_5500's questions (no labels) -> SentEval's TREC protocol (fasttest; test: TREC_10)",
        _trec_sentences,
        _trec_score,
    ),
}
