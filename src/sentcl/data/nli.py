"""NLI training data for supervised SimCSE (Gao et al. 2021): (premise, entailment, contradiction) triples.

Supervised SimCSE scores anchor h_i = f(x_i) against its entailment h_i^+ and every hard negative h_j^-:
    -log exp(sim(h_i, h_i^+)/τ) / Σ_j (exp(sim(h_i, h_j^+)/τ) + exp(sim(h_i, h_j^-)/τ))
so an example is a tuple of strings ``(premise, entailment, contradiction)`` (x_i, x_i^+, x_i^-), optionally
followed by a neutral hypothesis as a second hard negative: ``(premise, entailment, contradiction, neutral)``.
The views of a method are then the tuple itself.

Formats read here:

- ``nli_for_simcse.csv`` (SimCSE's training file): header ``sent0,sent1,hard_neg`` -> triples;
  ``sent0,sent1`` -> pairs ``(premise, entailment)`` (no hard negative);
  ``sent0,sent1,hard_neg,neutral`` (this project's extension) -> 4-tuples with the neutral hypothesis last.
- SNLI / MNLI jsonl (``sentence1``, ``sentence2``, ``gold_label``) and SentEval's SNLI folder
  (``s1.<split>``, ``s2.<split>``, ``labels.<split>``): labelled pairs, turned into triples by ``build_triples``.

Fields are stripped of surrounding whitespace. Errors name the file and line.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from sentcl.data.readers import Corpus, DataFormatError, iter_text_lines, require_file
from sentcl.data.tables import iter_csv_records, iter_records
from sentcl.files.atomic import atomic_write_text
from sentcl.files.pathcheck import check_input_dir

NliExample = tuple[str, ...]
LABELS = ("entailment", "neutral", "contradiction")
#: SNLI's gold label when the annotators did not agree; such records are skipped and counted
NO_GOLD_LABEL = "-"
#: accepted csv headers -> number of fields; the fields map to (premise, entailment, contradiction, neutral)
CSV_HEADERS: dict[tuple[str, ...], int] = {
    ("sent0", "sent1"): 2,
    ("sent0", "sent1", "hard_neg"): 3,
    ("sent0", "sent1", "hard_neg", "neutral"): 4,
}


@dataclass
class TripleStats:
    """What ``build_triples`` did: every premise lands in exactly one of triples / skipped_*."""

    records: int = 0
    unlabelled_records: int = 0  # gold label "-", skipped
    premises: int = 0
    triples: int = 0
    skipped_no_entailment: int = 0  # has a contradiction but no entailment
    skipped_no_contradiction: int = 0  # has an entailment but no contradiction
    skipped_neither: int = 0  # neither an entailment nor a contradiction (only neutral or "-")
    skipped_no_neutral: int = 0  # with_neutral only: entailment and contradiction but no neutral

    def skipped(self) -> dict[str, int]:
        """The counts of dropped records/premises, as ``Corpus.skipped`` wants them."""
        return {
            k: v for k, v in asdict(self).items() if k == "unlabelled_records" or k.startswith("skipped_")
        }


def build_triples(
    records: Iterable[tuple[str, str, str]], with_neutral: bool = False
) -> tuple[list[NliExample], TripleStats]:
    """Group (premise, hypothesis, label) records by premise and build ONE example per premise.

    A premise with an entailment and a contradiction hypothesis gives (premise, entailment, contradiction);
    with ``with_neutral`` it also needs a neutral one and gives (premise, entailment, contradiction, neutral).
    When a premise has several hypotheses of a label, the first in record order is used. Examples come in
    the order of each premise's first record. Records labelled "-" are skipped and counted.
    """
    stats = TripleStats()
    # premise -> label -> first hypothesis; dicts keep first-appearance order
    by_premise: dict[str, dict[str, str]] = {}
    for index, (premise, hypothesis, label) in enumerate(records):
        stats.records += 1
        hypotheses = by_premise.setdefault(premise, {})
        if label == NO_GOLD_LABEL:
            stats.unlabelled_records += 1
            continue
        if label not in LABELS:
            raise ValueError(
                f"record {index}: unknown label {label!r}; expected one of {LABELS + (NO_GOLD_LABEL,)}"
            )
        hypotheses.setdefault(label, hypothesis)
    examples: list[NliExample] = []
    for premise, hypotheses in by_premise.items():
        stats.premises += 1
        entailment, contradiction = hypotheses.get("entailment"), hypotheses.get("contradiction")
        if entailment is None and contradiction is None:
            stats.skipped_neither += 1
        elif entailment is None:
            stats.skipped_no_entailment += 1
        elif contradiction is None:
            stats.skipped_no_contradiction += 1
        elif not with_neutral:
            examples.append((premise, entailment, contradiction))
        elif "neutral" not in hypotheses:
            stats.skipped_no_neutral += 1
        else:
            examples.append((premise, entailment, contradiction, hypotheses["neutral"]))
    stats.triples = len(examples)
    return examples, stats


def _check_label(path: Path, lineno: int, label: str) -> str:
    if label not in LABELS and label != NO_GOLD_LABEL:
        raise DataFormatError(
            f"{path}:{lineno}: unknown label {label!r}; expected one of {', '.join(LABELS)} or {NO_GOLD_LABEL!r}"
        )
    return label


def _check_file(path: Path) -> None:
    require_file(path, "NLI file")


def read_nli_csv(path: str | Path, max_examples: int | None = None) -> Corpus:
    """SimCSE's ``nli_for_simcse.csv``: one example a row, its length set by the header (see module doc).

    Parsing is strict (``sentcl.data.tables.iter_csv_records``): a record must sit on one line, so an
    unbalanced quote is an error naming its line instead of a field that swallows the rows after it.
    """
    path = Path(path)
    _check_file(path)
    records = iter_csv_records(path)
    examples: list[NliExample] = []
    empty_rows = 0
    first = next(records, None)
    header = tuple(name.strip() for name in first[1]) if first else ()
    if header not in CSV_HEADERS:
        expected = " or ".join(",".join(h) for h in CSV_HEADERS)
        raise DataFormatError(f"{path}:1: header {','.join(header)!r} is not one of: {expected}")
    width = CSV_HEADERS[header]
    for lineno, row in records:
        if not row:
            empty_rows += 1
            continue
        if len(row) != width:
            raise DataFormatError(
                f"{path}:{lineno}: expected {width} fields ({','.join(header)}), got {len(row)}"
            )
        fields = tuple(field.strip() for field in row)
        for name, value in zip(header, fields, strict=True):
            if not value:
                raise DataFormatError(f"{path}:{lineno}: field {name!r} is empty")
        examples.append(fields)
        if max_examples is not None and len(examples) >= max_examples:
            break
    return Corpus(path, examples, {"empty_lines": empty_rows})


def _jsonl_records(path: Path, skipped: dict[str, int]) -> Iterator[tuple[str, str, str]]:
    for lineno, record in iter_records(path, "jsonl", skipped, key="empty_lines"):
        values = []
        for key in ("sentence1", "sentence2", "gold_label"):
            value = record.get(key)
            if not isinstance(value, str):
                raise DataFormatError(f"{path}:{lineno}: {key!r} is missing or not a string")
            values.append(value.strip())
        premise, hypothesis, label = values
        if not premise or not hypothesis:
            raise DataFormatError(f"{path}:{lineno}: empty sentence1 or sentence2")
        yield premise, hypothesis, _check_label(path, lineno, label)


def read_nli_jsonl(path: str | Path, max_examples: int | None = None, with_neutral: bool = False) -> Corpus:
    """SNLI / MNLI jsonl (``sentence1``, ``sentence2``, ``gold_label``): triples by ``build_triples``."""
    path = Path(path)
    _check_file(path)
    skipped = {"empty_lines": 0}
    examples, stats = build_triples(_jsonl_records(path, skipped), with_neutral=with_neutral)
    return Corpus(path, examples[:max_examples], skipped | stats.skipped())


def _read_column(path: Path) -> list[tuple[int, str]]:
    return list(iter_text_lines(path, "SentEval SNLI file"))


def iter_senteval_snli(folder: Path, split: str) -> Iterator[tuple[str, str, str]]:
    """(premise, hypothesis, label) of one split: line k of ``s1``, ``s2`` and ``labels`` go together."""
    names = (f"s1.{split}", f"s2.{split}", f"labels.{split}")
    columns = [_read_column(folder / name) for name in names]
    counts = [len(column) for column in columns]
    if len(set(counts)) != 1:
        sizes = ", ".join(f"{name}: {n}" for name, n in zip(names, counts, strict=True))
        raise DataFormatError(f"{folder}: the {split} files have different line counts ({sizes})")
    for (lineno, s1), (_, s2), (_, label) in zip(*columns, strict=True):
        premise, hypothesis = s1.strip(), s2.strip()
        for name, value in ((names[0], premise), (names[1], hypothesis)):
            if not value:
                raise DataFormatError(f"{folder / name}:{lineno}: empty sentence")
        yield premise, hypothesis, _check_label(folder / names[2], lineno, label.strip())


def _senteval_triples(
    folder: Path, splits: Sequence[str], with_neutral: bool
) -> tuple[list[NliExample], TripleStats]:
    check_input_dir(folder, "SentEval SNLI folder", DataFormatError)
    records = (record for split in splits for record in iter_senteval_snli(folder, split))
    return build_triples(records, with_neutral=with_neutral)


def read_senteval_snli(
    folder: str | Path,
    max_examples: int | None = None,
    *,
    splits: Sequence[str] = ("dev", "test"),
    with_neutral: bool = False,
) -> Corpus:
    """SentEval's SNLI folder as triples; premises are grouped across all ``splits`` (default dev + test)."""
    folder = Path(folder)
    examples, stats = _senteval_triples(folder, splits, with_neutral)
    return Corpus(folder, examples[:max_examples], stats.skipped())


def write_nli_csv(examples: Sequence[NliExample], path: str | Path) -> None:
    """Write examples in ``nli_for_simcse.csv`` format (header by tuple length), atomically (tmp + rename)."""
    path = Path(path)
    widths = {len(example) for example in examples}
    if len(widths) > 1:
        raise ValueError(f"examples have different lengths: {sorted(widths)}")
    width = widths.pop() if widths else 3
    header = next((h for h, n in CSV_HEADERS.items() if n == width), None)
    if header is None:
        raise ValueError(f"examples have {width} fields; the csv format takes {sorted(CSV_HEADERS.values())}")
    for index, example in enumerate(examples):
        for name, value in zip(header, example, strict=True):
            if "\n" in value or "\r" in value:
                raise ValueError(
                    f"example {index}: {name} {value[:40]!r} holds a line break; the csv keeps one example a line"
                )
    if path.is_dir():
        raise ValueError(
            f"output {path} is a directory; give a file name, e.g. {path / 'nli_for_simcse.csv'}"
        )
    blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise ValueError(f"output {path} cannot be written: {blocking} is a file, not a directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(examples)
    atomic_write_text(path, text.getvalue())


def build_nli_from_senteval(
    folder: str | Path, splits: Sequence[str], output: str | Path, with_neutral: bool = False
) -> TripleStats:
    """Build supervised-SimCSE triples from SentEval's SNLI folder and write them as ``nli_for_simcse.csv``.

    Command line: ``sentcl build-nli --senteval-snli DIR --splits dev test --output FILE``.
    Returns the counts of ``build_triples`` (premises, triples, skipped premises, "-" records).
    """
    examples, stats = _senteval_triples(Path(folder), splits, with_neutral)
    write_nli_csv(examples, output)
    return stats
