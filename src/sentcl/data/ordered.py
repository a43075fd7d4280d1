"""Ordered text for next-sentence objectives (SimCSE Table 2) and Quick-Thoughts (Logeswaran & Lee 2018).

A file is read as consecutive sentences, one a line, in file order. A blank (or whitespace-only) line ends
a document: s_i and s_{i+1} are neighbours only within one document. A file without blank lines (such as
``wiki1m_prefix.txt``) is ONE document, so every line but the last has a successor.

Two readers (registered in ``sentcl.data.sources``):

- ``ordered_lines``: every sentence as an ``OrderedSentence(text, doc_id, position)``, for Quick-Thoughts:
  batches of B consecutive sentences (``contiguous_batches``); the objective's targets are the in-batch
  neighbours (``sentcl.methods.quick_thoughts.loss.neighbour_targets``, from each row's document and position):
  p(s_j | s_i) = exp(f(s_i)·g(s_j)) / Σ_{k in batch} exp(f(s_i)·g(s_k)).
- ``next_sentence``: anchors only, each a ``NextSentenceExample`` that carries its next ``MAX_WINDOW``
  sentences of the same document, so the view function ``NextSentenceViews(window, seed)`` needs no corpus
  (a method can be built from its config alone). The last sentence of each document has no successor: it
  is never an anchor and is counted in ``skipped["no_next_sentence"]``.
"""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from sentcl.data.readers import Corpus, iter_text_lines, require_file
from sentcl.data.sampler import epoch_permutation

logger = logging.getLogger(__name__)

#: the widest "next k sentences" window an example carries (SimCSE Table 2: next 3 sentences)
MAX_WINDOW = 3


@dataclass(frozen=True)
class OrderedSentence:
    """Sentence s_i: its text, its document (0, 1, ... in file order) and its 0-based position there."""

    text: str
    doc_id: int
    position: int


@dataclass(frozen=True)
class NextSentenceExample:
    """An anchor s_i with the following sentences s_{i+1}..s_{i+k} of its document (1 <= k <= MAX_WINDOW)."""

    sentence: OrderedSentence
    successors: tuple[str, ...]

    @property
    def text(self) -> str:
        """The anchor's text (what duplicate checks in a batch compare)."""
        return self.sentence.text


def iter_ordered_sentences(path: Path, counts: dict[str, int]) -> Iterator[OrderedSentence]:
    """Sentences in file order; blank lines end a document and are counted in ``counts["empty_lines"]``."""
    doc_id, position = 0, 0
    for _, text in iter_text_lines(path):
        text = text.strip()
        if not text:
            counts["empty_lines"] = counts.get("empty_lines", 0) + 1
            if position:  # a run of blank lines, or blank lines before the first sentence, is one boundary
                doc_id, position = doc_id + 1, 0
            continue
        yield OrderedSentence(text, doc_id, position)
        position += 1


def _check_file(path: Path) -> None:
    require_file(path)


def read_ordered_lines(path: str | Path, max_examples: int | None = None) -> Corpus:
    """Every sentence as an ``OrderedSentence``, in file order (nothing dropped but blank lines)."""
    path = Path(path)
    _check_file(path)
    counts = {"empty_lines": 0}
    examples: list[OrderedSentence] = []
    for sentence in iter_ordered_sentences(path, counts):
        examples.append(sentence)
        if max_examples is not None and len(examples) >= max_examples:
            break
    return Corpus(path, examples, counts)


def next_sentence_examples(
    sentences: Iterable[OrderedSentence], counts: dict[str, int], max_window: int = MAX_WINDOW
) -> Iterator[NextSentenceExample]:
    """Each sentence with a successor, with up to ``max_window`` successors; streams in file order.

    The last sentence of each document is not yielded; it is counted in ``counts["no_next_sentence"]``.
    """
    pending: deque[tuple[OrderedSentence, list[str]]] = deque()  # sentences still collecting successors

    def flush() -> Iterator[NextSentenceExample]:
        while pending:
            sentence, successors = pending.popleft()
            if successors:
                yield NextSentenceExample(sentence, tuple(successors))
            else:
                counts["no_next_sentence"] = counts.get("no_next_sentence", 0) + 1

    for sentence in sentences:
        if pending and pending[-1][0].doc_id != sentence.doc_id:
            yield from flush()
        for _, successors in pending:
            successors.append(sentence.text)
        while pending and len(pending[0][1]) == max_window:
            done, successors = pending.popleft()
            yield NextSentenceExample(done, tuple(successors))
        pending.append((sentence, []))
    yield from flush()


def read_next_sentence(path: str | Path, max_examples: int | None = None) -> Corpus:
    """Anchors s_i that have a successor in their document, as ``NextSentenceExample`` (see module doc)."""
    path = Path(path)
    _check_file(path)
    counts = {"empty_lines": 0, "no_next_sentence": 0}
    examples: list[NextSentenceExample] = []
    for example in next_sentence_examples(iter_ordered_sentences(path, counts), counts):
        examples.append(example)
        if max_examples is not None and len(examples) >= max_examples:
            break
    return Corpus(path, examples, counts)


class NextSentenceViews:
    """View function example -> (s_i, s_j) with j = i+1 (window 1) or j uniform in i+1..i+window (same doc).

    Near the end of a document only the successors that exist are drawn from. The draw is a function of
    (seed, epoch, doc_id, position), so it is the same on every run and after resuming; ``set_epoch`` lets
    the training loop draw new partners each epoch.
    """

    def __init__(self, window: int = 1, seed: int = 0) -> None:
        if not 1 <= window <= MAX_WINDOW:
            raise ValueError(f"next-sentence window must be in 1..{MAX_WINDOW}, got {window}")
        self.window = window
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __call__(self, example: NextSentenceExample) -> tuple[str, str]:
        candidates = example.successors[: self.window]
        if not candidates:
            raise ValueError(f"sentence {example.sentence} has no next sentence; it cannot be an anchor")
        if len(candidates) == 1:
            return example.sentence.text, candidates[0]
        key = f"{self.seed}:{self.epoch}:{example.sentence.doc_id}:{example.sentence.position}"
        return example.sentence.text, random.Random(key).choice(candidates)


def has_neighbour_pair(block: Sequence[OrderedSentence]) -> bool:
    """True when some sentence of the block has its successor (same document, next position) in the block."""
    keys = {(s.doc_id, s.position) for s in block}
    return any((s.doc_id, s.position + 1) in keys for s in block)


def contiguous_batches(
    num_examples: int,
    batch_size: int,
    seed: int,
    epoch: int,
    examples: Sequence[OrderedSentence] | None = None,
) -> list[list[int]]:
    """Quick-Thoughts batches: blocks of ``batch_size`` consecutive indices, block order shuffled per epoch.

    Block b holds indices b·B .. min((b+1)·B, N) - 1 (the last may be smaller). Given the ``examples``, a
    block with no (sentence, neighbour) pair, such as a trailing block of one sentence or one whose
    sentences all lie in different documents, has nothing to predict: it is dropped and logged (a warning
    with the number of blocks and sentences). Without ``examples`` every index appears once.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    blocks = [
        list(range(start, min(start + batch_size, num_examples)))
        for start in range(0, num_examples, batch_size)
    ]
    if examples is not None:
        if len(examples) != num_examples:
            raise ValueError(f"{len(examples)} examples for num_examples={num_examples}")
        kept = [b for b in blocks if has_neighbour_pair([examples[i] for i in b])]
        if len(kept) < len(blocks):
            dropped = sum(len(b) for b in blocks) - sum(len(b) for b in kept)
            logger.warning(
                "Quick-Thoughts: dropped %d of %d blocks of consecutive sentences (%d sentences) that hold no "
                "(sentence, next sentence) pair of one document, e.g. a trailing block of one sentence",
                len(blocks) - len(kept),
                len(blocks),
                dropped,
            )
        blocks = kept
    return [blocks[b] for b in epoch_permutation(len(blocks), seed, epoch)]
