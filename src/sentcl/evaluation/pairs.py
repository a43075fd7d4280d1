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
decomposes Hangul syllables into jamo (BERT's ``strip_accents``/lower-casing applies NFD). Whether that hurts
depends on the vocabulary: one holding precomposed syllables loses Korean to [UNK], one holding only jamo
(all-MiniLM-L6-v2) needs the decomposition. So ``warn_if_mangled`` advises from a measurement, not a rule:
it tokenises the user's own sentences with ``strip_accents`` as loaded and flipped (``unk_rates``), and
recommends the setting with fewer [UNK] pieces, or says the model cannot read the text when neither is good.
"""

from __future__ import annotations

import json
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


def _bert_normalizer(tokenizer: Any) -> dict[str, Any] | None:
    """The fast tokenizer's serialised pipeline when its normaliser is BERT's (strip_accents settable)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    pipeline = json.loads(backend.to_str())
    normalizer = pipeline.get("normalizer") or {}
    return pipeline if normalizer.get("type") == "BertNormalizer" else None


def unk_rates(tokenizer: Any, sentences: Sequence[str]) -> dict[str, float] | None:
    """Share of [UNK] pieces of ``sentences`` with the tokenizer as loaded and with ``strip_accents`` flipped
    (keys "as loaded" and "strip_accents=False"/"=True"); None when the normaliser is not BERT's."""
    from tokenizers import Tokenizer

    pipeline = _bert_normalizer(tokenizer)
    if pipeline is None:
        return None
    normalizer = pipeline["normalizer"]
    strips = (
        normalizer["strip_accents"] if normalizer["strip_accents"] is not None else normalizer["lowercase"]
    )
    rates = {"as loaded": tokenizer_report(tokenizer, sentences)["unk_rate"]}
    normalizer["strip_accents"] = not strips
    flipped = Tokenizer.from_str(json.dumps(pipeline))
    flipped.no_padding()  # a saved pipeline may pad to a length: count the sentences' own pieces only
    flipped.no_truncation()
    pieces = [flipped.encode(s, add_special_tokens=False).tokens for s in sentences]
    total = sum(map(len, pieces))
    unknown = sum(t == tokenizer.unk_token for tokens in pieces for t in tokens)
    rates[f"strip_accents={not strips}"] = unknown / total if total else 0.0
    return rates


def _advice(tokenizer: Any, sentences: Sequence[str], report: dict[str, Any], readable: float) -> str:
    """What to do about many [UNK] pieces, from ``unk_rates`` on the user's sentences and the vocabulary."""
    rates = unk_rates(tokenizer, sentences)
    vocab = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else {}
    syllables = sum(any(map(_hangul_syllable, piece)) for piece in vocab)
    jamo = sum(any(map(_jamo, piece)) for piece in vocab)
    hangul = any(_hangul_syllable(ch) or _jamo(ch) for s in sentences for ch in s)
    holds = (
        f" Its vocabulary holds {syllables} pieces with Hangul syllables and {jamo} with jamo."
        if vocab and hangul
        else ""
    )
    if rates is None:
        why = "decomposes Hangul into jamo" if report["hangul_decomposed"] else "does not cover this text"
        return f" The tokenizer {why}.{holds} Use a model whose vocabulary covers this text's script."
    measured = ", ".join(f"{name}: {100 * rate:.0f}%" for name, rate in rates.items())
    best = min(rates, key=rates.__getitem__)
    if rates[best] > readable:
        return (
            f" Measured on these sentences: {measured}.{holds} Neither setting reads this text: this model "
            "cannot read the language; use a model whose vocabulary covers its script."
        )
    if best == "as loaded":
        worse = "would make it worse" if max(rates.values()) > rates[best] else "would not help"
        return (
            f" Measured on these sentences: {measured}.{holds} Keep the tokenizer as it is (changing "
            f"strip_accents {worse}); the remaining [UNK] pieces are words or characters the vocabulary lacks."
        )
    return f" Measured on these sentences: {measured}.{holds} Load the tokenizer with {best}."


def warn_if_mangled(
    tokenizer: Any, sentences: Sequence[str], where: str, limit: float = 0.05, readable: float = 0.25
) -> dict[str, Any]:
    """Log a warning when more than ``limit`` of the pieces are [UNK], with advice measured on ``sentences``
    (``_advice``): the ``strip_accents`` setting with fewer [UNK] pieces, or, when even the better one leaves
    more than ``readable`` of them, that the model cannot read the text."""
    report = tokenizer_report(tokenizer, sentences)
    if report["unk_rate"] > limit:
        logger.warning(
            "%s: %.0f%% of the word pieces are %s.%s",
            where,
            100 * report["unk_rate"],
            tokenizer.unk_token,
            _advice(tokenizer, sentences, report, readable),
        )
    return report
