"""STS on a user's own pairs file, in any language: ``sentcl eval --pairs FILE`` and ``eval.dev_task: pairs:FILE``.

The file is read by ``sentcl.data.scored_pairs.read_pairs`` (the reader training uses too): TSV, CSV or JSONL
(``sentcl.data.tables``). Columns (sentence 1, sentence 2, score) are given by
name or 0-based index, or detected: by header names (sentence1/sent1/sentence_a/text1, ..., score/label/
similarity/relatedness_score), else, without a header, the single all-numeric column is the score and the two
other columns the sentences. So KorSTS (``genre filename year id score sentence1 sentence2`` with a header)
and the Chinese STS-B (``sent1<TAB>sent2<TAB>score``, no header) read as they are. The score range is given
(every score must lie in it) or detected (min and max, reported). Scoring is the STS evaluator's: ρ = 100 ·
Spearman(cos(u, v), gold) and 100 · Pearson, over the file's pairs.

Tokenisation is checked, not assumed: ``tokenizer_report`` counts [UNK] pieces and detects a tokenizer that
decomposes Hangul syllables into jamo (BERT's ``strip_accents``/lower-casing applies NFD), which maps Korean
to [UNK] when the vocabulary holds precomposed syllables; ``sentcl eval`` warns with the fix.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sentcl.data.readers import DataFormatError
from sentcl.data.scored_pairs import PairsFile, read_pairs
from sentcl.evaluation.sts import _correlations, _score_task
from sentcl.types import EncodeFn

logger = logging.getLogger(__name__)


def parse_columns(text: str | None) -> list[str] | None:
    """``S1,S2,SCORE`` (names or 0-based indices) -> list; None stays None."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 3 or not all(parts):
        raise ValueError(
            f"--columns expects three comma-separated names or indices S1,S2,SCORE, got {text!r}"
        )
    return parts


def parse_range(text: str | None) -> tuple[float, float] | None:
    """``LO,HI`` -> (lo, hi) with lo < hi; None stays None."""
    if text is None:
        return None
    try:
        lo, hi = (float(p) for p in text.split(","))
    except ValueError:
        raise ValueError(f"--score-range expects LO,HI (two numbers), got {text!r}") from None
    if not lo < hi:
        raise ValueError(f"--score-range needs LO < HI, got {text!r}")
    return lo, hi


def score_pairs(encode: EncodeFn, data: PairsFile) -> dict[str, Any]:
    """{"spearman", "pearson" (both ×100), "n", "file", "columns", "score_min", "score_max", "range"}."""
    if len({p[2] for p in data.pairs}) < 2:
        raise DataFormatError(
            f"{data.path}: every score is {data.pairs[0][2]:g}; a correlation needs two or more"
        )
    sims, gold = _score_task(encode, {"pairs": data.pairs})["pairs"]
    result = _correlations(sims, gold, str(data.path))
    return result | {
        "file": str(data.path),
        "columns": ",".join(data.columns),
        "score_min": data.score_range[0],
        "score_max": data.score_range[1],
        "range": "given" if data.range_given else "detected",
    }


def evaluate_pairs(
    encode: EncodeFn,
    path: str | Path,
    columns: Sequence[str | int] | None = None,
    score_range: tuple[float, float] | None = None,
    fmt: str | None = None,
) -> dict[str, Any]:
    """Read a pairs file (``read_pairs``) and score it (``score_pairs``)."""
    return score_pairs(encode, read_pairs(path, columns, score_range, fmt))


def _hangul_syllable(ch: str) -> bool:
    return "\uac00" <= ch <= "\ud7a3"


def _jamo(ch: str) -> bool:
    return "\u1100" <= ch <= "\u11ff"


def _normalized(tokenizer: Any, sentence: str) -> str:
    """The text as the tokenizer's normaliser leaves it (fast: its normalizer; slow BERT: basic tokenizer)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and backend.normalizer is not None:
        return backend.normalizer.normalize_str(sentence)
    basic = getattr(tokenizer, "basic_tokenizer", None)
    return " ".join(basic.tokenize(sentence)) if basic is not None else sentence


def tokenizer_report(tokenizer: Any, sentences: Sequence[str]) -> dict[str, Any]:
    """{"unk_rate": share of [UNK] pieces, "hangul_decomposed": the tokenizer turned syllables into jamo}."""
    unk = getattr(tokenizer, "unk_token", None)
    pieces = unknown = 0
    decomposed = False
    for sentence in sentences:
        tokens = tokenizer.tokenize(sentence)
        pieces += len(tokens)
        unknown += sum(t == unk for t in tokens)
        if any(map(_hangul_syllable, sentence)) and not any(map(_jamo, sentence)):
            decomposed |= any(map(_jamo, _normalized(tokenizer, sentence)))
    return {"unk_rate": unknown / pieces if pieces else 0.0, "hangul_decomposed": decomposed}


def warn_if_mangled(
    tokenizer: Any, sentences: Sequence[str], where: str, limit: float = 0.05
) -> dict[str, Any]:
    """Log a warning when more than ``limit`` of the pieces are [UNK] (naming the Hangul NFD pitfall)."""
    report = tokenizer_report(tokenizer, sentences)
    if report["unk_rate"] > limit:
        why = (
            " The tokenizer decomposes Hangul syllables into jamo (NFD under strip_accents / lower-casing) that "
            "its vocabulary lacks: load it with strip_accents=False, or use a model whose vocabulary covers jamo."
            if report["hangul_decomposed"]
            else " The model's vocabulary does not cover this text's script or words."
        )
        logger.warning(
            "%s: %.0f%% of the word pieces are %s.%s",
            where,
            100 * report["unk_rate"],
            tokenizer.unk_token,
            why,
        )
    return report
