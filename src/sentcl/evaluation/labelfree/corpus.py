"""The unlabelled text of ``sentcl eval --unlabelled FILE`` and ``eval.unlabelled_file``: one sentence a line.

The file is read once, streaming (``sentcl.files.read.iter_text_lines``: a line that is not UTF-8 is an error
naming file:line). Blank lines are skipped and counted. A file of more than ``max_sentences`` non-blank lines
is sampled with reservoir sampling (Vitter's Algorithm R, "Random Sampling with a Reservoir", 1985) under a
fixed seed, so memory stays O(max_sentences) whatever the file's size and the same file gives the same sample;
the sample keeps the file's order. Repeated lines are kept once: the measures compare distinct sentences (a
duplicate would be its own nearest neighbour). Too few distinct sentences is an error, in one line.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from pathlib import Path

from sentcl.files.read import iter_text_lines

logger = logging.getLogger(__name__)

DEFAULT_MAX_SENTENCES = 10_000
DEFAULT_SEED = 0
#: the fewest distinct sentences the measures run on: a sentence and its 10 nearest neighbours
MIN_SENTENCES = 11


@dataclass(frozen=True)
class UnlabelledText:
    """Distinct sentences of ``path`` (sampled when ``sampled``) and what reading it found."""

    path: Path
    sentences: list[str]
    lines: int  # lines in the file
    nonblank: int  # non-blank lines in the file
    sampled: bool  # whether ``sample_size`` of the nonblank lines were drawn
    sample_size: int  # lines kept before duplicates were removed
    seed: int

    def describe(self) -> str:
        """One line: what the measures run on."""
        drawn = (
            f"a seeded sample (seed {self.seed}) of {self.sample_size:,} of its {self.nonblank:,} non-blank lines"
            if self.sampled
            else f"its {self.nonblank:,} non-blank lines"
        )
        return f"{self.path}: {len(self.sentences):,} distinct sentences from {drawn}"

    def summary(self) -> dict[str, object]:
        return {
            "file": str(self.path),
            "lines": self.lines,
            "nonblank_lines": self.nonblank,
            "sampled": self.sampled,
            "sample_size": self.sample_size,
            "seed": self.seed,
            "distinct_sentences": len(self.sentences),
        }


def reservoir(path: Path, size: int, seed: int) -> tuple[list[tuple[int, str]], int, int]:
    """(kept (line number, text) in file order, lines, non-blank lines): Algorithm R over the non-blank lines."""
    rng = random.Random(seed)
    kept: list[tuple[int, str]] = []
    lines = nonblank = 0
    for lineno, text in iter_text_lines(path, "unlabelled file"):
        lines = lineno
        text = text.strip()
        if not text:
            continue
        nonblank += 1
        if len(kept) < size:
            kept.append((lineno, text))
        else:
            j = rng.randrange(nonblank)  # keep this line with probability size / nonblank
            if j < size:
                kept[j] = (lineno, text)
    kept.sort()
    return kept, lines, nonblank


def read_unlabelled(
    path: str | Path, max_sentences: int = DEFAULT_MAX_SENTENCES, seed: int = DEFAULT_SEED
) -> UnlabelledText:
    """The distinct sentences of ``path`` (a seeded sample of ``max_sentences`` lines of a larger file)."""
    path = Path(path)
    if max_sentences < MIN_SENTENCES:
        raise ValueError(f"the sample size must be at least {MIN_SENTENCES}, got {max_sentences}")
    kept, lines, nonblank = reservoir(path, max_sentences, seed)
    if nonblank == 0:
        raise ValueError(f"{path}: no sentences (the file is empty or every line is blank)")
    sentences = list(dict.fromkeys(text for _, text in kept))
    text = UnlabelledText(path, sentences, lines, nonblank, nonblank > max_sentences, len(kept), seed)
    if len(sentences) < MIN_SENTENCES:
        repeated = (
            f" ({len(kept):,} lines, all repeats of {len(sentences)})" if len(kept) > len(sentences) else ""
        )
        raise ValueError(
            f"{path}: {len(sentences)} distinct sentence(s){repeated}; the label-free measures need at least "
            f"{MIN_SENTENCES} (a sentence and its 10 nearest neighbours)"
        )
    if len(sentences) < len(kept):
        logger.warning(
            "%s: %d of the %d lines read repeat an earlier line; the measures use the %d distinct sentences",
            path,
            len(kept) - len(sentences),
            len(kept),
            len(sentences),
        )
    if text.sampled:
        logger.warning(
            "%s holds %d non-blank lines: the measures use a seeded sample of %d (seed %d; --unlabelled-sample)",
            path,
            nonblank,
            max_sentences,
            seed,
        )
    return text
