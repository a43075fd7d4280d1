"""Hard-negative mining for supervised SimCSE: ``sentcl mine`` (sentence-transformers' ``mine_hard_negatives``).

Given (anchor, positive) pairs, the corpus is the distinct positives plus an optional corpus file (each
distinct text once, so duplicates of a positive vanish with it). Anchors and corpus are embedded,
normalised, and scored by cosine. Per distinct anchor:

1. retrieve the top ``range_max + max_positives`` corpus texts (+1 for an anchor whose own text is in
   the corpus and excluded; no extra candidate for the others), score descending, ties by corpus order;
2. drop its positives (and, ``exclude_anchor``, a text equal to the anchor: our addition, on by default;
   sentence-transformers keeps it);
3. drop candidates whose score s fails a filter, each optional: ``absolute_margin`` (s + m > p),
   ``relative_margin`` (s > p - |p|·m), ``max_score`` (s > x), ``min_score`` (s < x), where p is the
   anchor's lowest positive score;
4. of the surviving candidates in rank order, keep ranks ``range_min`` .. ``range_max - 1`` (0-based);
5. take ``num_negatives`` of them: the first ones (``sampling="top"``) or a seeded uniform sample
   (``"random"``, then sorted by score).

``range_max`` defaults as in sentence-transformers: ``range_min + num_negatives + max_positives``, or
``range_min + 10·num_negatives + max_positives`` when a margin or ``max_score`` filters candidates. The
output is one ``sent0,sent1,hard_neg`` row per (anchor, positive, negative): the file supervised SimCSE
trains on. An anchor with fewer surviving candidates gets fewer rows, counted in the log.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.config.names import MINING_SAMPLING
from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.index.exact import ExactIndex
from sentcl.similarity import unit_rows

logger = logging.getLogger(__name__)
SAMPLING = MINING_SAMPLING


@dataclass
class MiningSettings:
    range_min: int = 0
    range_max: int | None = None
    max_score: float | None = None
    min_score: float | None = None
    absolute_margin: float | None = None
    relative_margin: float | None = None
    num_negatives: int = 3
    sampling: str = "top"
    exclude_anchor: bool = True
    seed: int = 0

    def _check_bounds(self) -> None:
        """Finite score bounds and margins (a NaN filters nothing), and --min-score <= --max-score."""
        for name in ("max_score", "min_score", "absolute_margin", "relative_margin"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise ValueError(f"--{name.replace('_', '-')} must be a finite number, got {value}")
        if self.min_score is not None and self.max_score is not None and self.min_score > self.max_score:
            raise ValueError(
                f"--min-score {self.min_score} is above --max-score {self.max_score}: no candidate can pass "
                "both; swap them?"
            )

    def window(self, max_positives: int) -> tuple[int, int]:
        """(range_min, range_max) with the default range_max filled in, validated."""
        if self.num_negatives < 1:
            raise ValueError(f"--num-negatives must be >= 1, got {self.num_negatives}")
        if self.range_min < 0:
            raise ValueError(f"--range-min must be >= 0, got {self.range_min}")
        if self.sampling not in SAMPLING:
            raise ValueError(f"--sampling must be one of {', '.join(SAMPLING)}, got {self.sampling!r}")
        self._check_bounds()
        filtered = any(v is not None for v in (self.absolute_margin, self.relative_margin, self.max_score))
        range_max = self.range_max
        if range_max is None:
            range_max = self.range_min + self.num_negatives * (10 if filtered else 1) + max_positives
        if range_max - self.range_min < self.num_negatives:
            raise ValueError(
                f"--range-max {range_max} leaves fewer than --num-negatives {self.num_negatives} ranks "
                f"after --range-min {self.range_min}"
            )
        return self.range_min, range_max


def mine(
    anchors: np.ndarray,
    corpus: np.ndarray,
    positives: list[list[int]],
    settings: MiningSettings,
    anchor_in_corpus: list[int | None] | None = None,
) -> tuple[list[list[int]], list[list[float]], dict[str, int]]:
    """Negatives per anchor: (corpus ids, cosines) lists, and counts of what each filter removed.

    anchors (Q, D), corpus (N, D); ``positives[q]``: corpus ids of anchor q's positives;
    ``anchor_in_corpus[q]``: the corpus id of a text equal to anchor q, if any.
    """
    a, c = unit_rows(np.asarray(anchors, dtype=np.float32)), unit_rows(np.asarray(corpus, dtype=np.float32))
    max_pos = max(len(p) for p in positives)
    _, range_max = settings.window(max_pos)
    pool = (
        range_max + max_pos
    )  # sentence-transformers' pool; one more only where the anchor's text is dropped
    own = [
        settings.exclude_anchor and anchor_in_corpus is not None and anchor_in_corpus[q] is not None
        for q in range(len(a))
    ]
    k = min(pool + (1 if any(own) else 0), len(c))
    scores, ids = ExactIndex(c, normalize=False).search(a, k)  # (Q, k), (Q, k): score desc, ties by id
    pos_scores = [float(min(a[q] @ c[j] for j in positives[q])) for q in range(len(a))]
    return choose(scores, ids, positives, pos_scores, settings, pool, own, anchor_in_corpus)


def choose(
    scores: np.ndarray,
    ids: np.ndarray,
    positives: list[list[int]],
    pos_scores: list[float],
    settings: MiningSettings,
    pool: int,
    own: list[bool],
    anchor_in_corpus: list[int | None] | None,
) -> tuple[list[list[int]], list[list[float]], dict[str, int]]:
    """Steps 2-5 of the module doc over each anchor's retrieved candidates: scores (Q, k) descending, ids
    (Q, k) (-1: none); ``pos_scores[q]``: anchor q's lowest positive cosine; ``own[q]``: its text is among
    the corpus and excluded (one more candidate in its pool)."""
    range_min, range_max = settings.window(max(len(p) for p in positives))
    k = ids.shape[1]
    scores = scores.astype(np.float64)
    removed = {
        "positive": 0,
        "anchor_text": 0,
        "absolute_margin": 0,
        "relative_margin": 0,
        "max_score": 0,
        "min_score": 0,
    }
    rng = np.random.default_rng(settings.seed)
    out_ids: list[list[int]] = []
    out_scores: list[list[float]] = []
    for q in range(len(ids)):
        pos_score = pos_scores[q]
        in_pool = (np.arange(k) < pool + (1 if own[q] else 0)) & (ids[q] >= 0)  # (k,)
        is_pos = np.isin(ids[q], positives[q]) & in_pool
        removed["positive"] += int(is_pos.sum())
        keep = in_pool & ~is_pos
        if settings.exclude_anchor and anchor_in_corpus is not None and anchor_in_corpus[q] is not None:
            same = ids[q] == anchor_in_corpus[q]
            removed["anchor_text"] += int((same & keep).sum())
            keep &= ~same
        s = scores[q]
        for name, bad in (
            (
                "absolute_margin",
                None if settings.absolute_margin is None else s + settings.absolute_margin > pos_score,
            ),
            (
                "relative_margin",
                None
                if settings.relative_margin is None
                else s > pos_score - abs(pos_score) * settings.relative_margin,
            ),
            ("max_score", None if settings.max_score is None else s > settings.max_score),
            ("min_score", None if settings.min_score is None else s < settings.min_score),
        ):
            if bad is not None:
                removed[name] += int((bad & keep).sum())
                keep &= ~bad
        survivors = np.flatnonzero(keep)[range_min:range_max]  # positions in rank order
        if settings.sampling == "random" and len(survivors) > settings.num_negatives:
            survivors = np.sort(rng.choice(survivors, size=settings.num_negatives, replace=False))
        survivors = survivors[: settings.num_negatives]
        out_ids.append([int(ids[q, j]) for j in survivors])
        out_scores.append([float(scores[q, j]) for j in survivors])
    return out_ids, out_scores, removed


def mine_pairs(
    model: Any,
    pairs: list[tuple[int, str, str]],
    settings: MiningSettings,
    extra_corpus: list[str] | None = None,
    batch_size: int = ENCODE_BATCH_SIZE,
    max_length: int | None = None,
) -> tuple[list[tuple[str, str, str]], dict[str, Any]]:
    """(anchor, positive, hard negative) triples for the pairs, in input order, and statistics."""
    anchors: dict[str, int] = {}
    corpus: dict[str, int] = {}
    for _, anchor, positive in pairs:
        anchors.setdefault(anchor, len(anchors))
        corpus.setdefault(positive, len(corpus))
    for text in extra_corpus or []:
        corpus.setdefault(text, len(corpus))
    positives: list[list[int]] = [[] for _ in anchors]
    for _, anchor, positive in pairs:
        if corpus[positive] not in positives[anchors[anchor]]:
            positives[anchors[anchor]].append(corpus[positive])
    anchor_texts, corpus_texts = list(anchors), list(corpus)
    if len(corpus_texts) < 2:
        raise ValueError("the corpus has fewer than 2 distinct texts: nothing to mine negatives from")
    emb_a = model.encode(anchor_texts, batch_size=batch_size, max_length=max_length, normalize=True)
    emb_c = model.encode(corpus_texts, batch_size=batch_size, max_length=max_length, normalize=True)
    in_corpus = [corpus.get(t) for t in anchor_texts]
    neg_ids, _, removed = mine(np.asarray(emb_a), np.asarray(emb_c), positives, settings, in_corpus)
    return assemble(pairs, anchors, neg_ids, corpus_texts, settings, removed)


def assemble(
    pairs: Sequence[tuple[Any, str, str]],
    row_of_anchor: Mapping[str, int],
    neg_ids: Sequence[Sequence[int]],
    text_of: Any,
    settings: MiningSettings,
    removed: dict[str, int],
) -> tuple[list[tuple[str, str, str]], dict[str, Any]]:
    """The (anchor, positive, negative) rows, each distinct pair once in the pairs' order, and the run's counts;
    ``text_of[j]`` is candidate j's text, ``neg_ids[row_of_anchor[a]]`` anchor a's chosen candidates."""
    triples: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str]] = set()
    for _, anchor, positive in pairs:
        if (anchor, positive) in seen:
            continue
        seen.add((anchor, positive))
        triples.extend((anchor, positive, text_of[j]) for j in neg_ids[row_of_anchor[anchor]])
    short = sum(1 for n in neg_ids if len(n) < settings.num_negatives)
    stats = {"anchors": len(row_of_anchor), "corpus": len(text_of), "triples": len(triples)}
    stats.update({"anchors_short_of_negatives": short, "removed": removed})
    return triples, stats


def read_corpus_file(path: Path) -> list[str]:
    """Non-blank stripped lines of an extra corpus file (one text a line)."""
    from sentcl.data.readers import read_sentences

    return read_sentences(path, "corpus file", require_one=True).texts
