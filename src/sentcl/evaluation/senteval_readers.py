"""Readers for SentEval's transfer tasks (MR, CR, SUBJ, MPQA, SST-2, TREC, MRPC), in SentEval's layout.

Every reader mirrors what SentEval's own loader reads, so the counts match SentEval's: MR 10662,
CR 3775, SUBJ 10000, MPQA 10606, SST-2 67349/872/1821, TREC 5452/500, MRPC 4076/1725.
Sentences are whitespace-normalised (SentEval splits on whitespace; SimCSE's batcher re-joins the
tokens with one space). Encodings follow SentEval: latin-1 for MR/CR/SUBJ/MPQA/TREC (TREC's train
file has one non-UTF-8 byte), UTF-8 for SST-2 and MRPC (MRPC's byte-order mark is ignored).

Blank lines: CR (4) and MPQA (3) contain blank lines, which SentEval keeps as empty sentences with
the file's label; we keep them too (the counts above include them). Anywhere else a line that does
not parse is a ``ValueError`` naming the file, the line number and the problem.

The STS readers (STS12-16, STS-B, SICK-R; ``load_sts_task``) live here too: every SentEval file is read by
this module. STS files are UTF-8; a pair is (sentence 1, sentence 2, gold score).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sentcl.config.sts_table import STS_TASKS, YEARLY_STS_TASKS
from sentcl.data.scored_pairs import normalize_spaces as _norm
from sentcl.data.senteval_files import BINARY_FILES, MRPC_FILES, SST2_FILES, TREC_FILES
from sentcl.files.paths import data_file

TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
MRPC_HEADER = ("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String")

Pair = tuple[str, str, float]
# SentEval's subset lists. STS13: SentEval leaves out the SMT subset (its licence forbids
# redistribution), so we do the same even where STS.gs.SMT.txt is present.
STS_YEARS: dict[str, tuple[str, tuple[str, ...]]] = {
    "STS12": ("STS12-en-test", ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews")),
    "STS13": ("STS13-en-test", ("FNWN", "headlines", "OnWN")),
    "STS14": ("STS14-en-test", ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news")),
    "STS15": ("STS15-en-test", ("answers-forums", "answers-students", "belief", "headlines", "images")),
    "STS16": (
        "STS16-en-test",
        ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
    ),
}
assert tuple(STS_YEARS) == YEARLY_STS_TASKS  # main_score (sts_table.py) reports these pooled
STSB_FILES = {"train": "sts-train.csv", "dev": "sts-dev.csv", "test": "sts-test.csv"}
#: STS-B's genres (its first column); the forum genre is "main-forum" in train and "main-forums" in test
STSB_GENRES = ("main-captions", "main-news", "main-forum", "main-forums")
SICK_FILES = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}
SICK_HEADER = ("pair_ID", "sentence_A", "sentence_B", "relatedness_score", "entailment_judgment")


@dataclass(frozen=True)
class LabelledSentences:
    """One split of a single-sentence task: ``texts[i]`` has class ``labels[i]`` (int64, 0..C-1)."""

    texts: list[str]
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.texts)


@dataclass(frozen=True)
class LabelledPairs:
    """One split of a sentence-pair task: ``(first[i], second[i])`` has class ``labels[i]``."""

    first: list[str]
    second: list[str]
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.first)


def _read_lines(path: Path, encoding: str = "utf-8") -> list[str]:
    """Lines split on '\\n' ('\\r' dropped); the final newline ends the last line, it starts none.

    A UTF-8 byte-order mark is ignored; bad bytes are a ValueError naming the file and line.
    """
    raw = path.read_bytes()
    if encoding == "utf-8":
        raw = raw.removeprefix(b"\xef\xbb\xbf")  # byte-order mark
    chunks = raw.split(b"\n")
    if chunks and chunks[-1] == b"":
        chunks.pop()
    lines = []
    for lineno, chunk in enumerate(chunks, start=1):
        try:
            lines.append(chunk.removesuffix(b"\r").decode(encoding))
        except UnicodeDecodeError as err:
            raise ValueError(f"{path}, line {lineno}: not valid {encoding.upper()} ({err})") from err
    return lines


def _label(text: str, valid: tuple[str, ...], path: Path, lineno: int) -> int:
    """Index of ``text`` in ``valid``; anything else is an error naming the file and line."""
    if text not in valid:
        raise ValueError(f"{path}, line {lineno}: label {text!r} is not one of {', '.join(valid)}")
    return valid.index(text)


def read_binary_task(data_dir: Path, task: str) -> LabelledSentences:
    """MR, CR, SUBJ or MPQA: the "pos" file's lines get label 1, then the "neg" file's lines label 0."""
    if task not in BINARY_FILES:
        raise ValueError(f"unknown binary task {task!r}; valid: {', '.join(BINARY_FILES)}")
    folder, pos_name, neg_name = BINARY_FILES[task]
    texts: list[str] = []
    labels: list[int] = []
    for name, label in ((pos_name, 1), (neg_name, 0)):
        lines = _read_lines(data_file(Path(data_dir), "senteval", folder, name), "latin-1")
        texts.extend(_norm(line) for line in lines)
        labels.extend([label] * len(lines))
    return LabelledSentences(texts, np.asarray(labels, dtype=np.int64))


def _labelled_lines(
    path: Path, encoding: str, parse: Callable[[str, Path, int], tuple[str, int]]
) -> LabelledSentences:
    """One split of a one-sentence-a-line task: ``parse(line, path, lineno) -> (sentence, class)``."""
    texts: list[str] = []
    labels: list[int] = []
    for lineno, line in enumerate(_read_lines(path, encoding), start=1):
        text, label = parse(line, path, lineno)
        texts.append(_norm(text))
        labels.append(label)
    return LabelledSentences(texts, np.asarray(labels, dtype=np.int64))


def _sst2_line(line: str, path: Path, lineno: int) -> tuple[str, int]:
    fields = line.strip().split("\t")
    if len(fields) != 2:
        raise ValueError(f"{path}, line {lineno}: expected 'sentence<TAB>label', got {len(fields)} field(s)")
    return fields[0], _label(fields[1].strip(), ("0", "1"), path, lineno)


def _trec_line(line: str, path: Path, lineno: int) -> tuple[str, int]:
    coarse, sep, rest = line.strip().partition(":")
    fine_and_question = rest.split(" ", 1)
    if not sep or len(fine_and_question) != 2 or not fine_and_question[1].strip():
        raise ValueError(f"{path}, line {lineno}: expected 'COARSE:fine question', got {line[:60]!r}")
    return fine_and_question[1], _label(coarse, TREC_CLASSES, path, lineno)


def read_sst2(data_dir: Path) -> dict[str, LabelledSentences]:
    """SST-2 (binary) train/dev/test: ``sentence<TAB>label`` with label 0 or 1."""
    folder = Path(data_dir) / "senteval"
    return {
        split: _labelled_lines(data_file(folder, "SST", "binary", name), "utf-8", _sst2_line)
        for split, name in SST2_FILES.items()
    }


def read_trec(data_dir: Path) -> dict[str, LabelledSentences]:
    """TREC train/test: ``COARSE:fine question``; the class is the coarse label (6 classes, TREC_CLASSES)."""
    folder = Path(data_dir) / "senteval"
    return {
        split: _labelled_lines(data_file(folder, "TREC", name), "latin-1", _trec_line)
        for split, name in TREC_FILES.items()
    }


def _table_rows(
    path: Path, header: tuple[str, ...], encoding: str = "utf-8"
) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of a tab-separated file whose first line must be ``header`` and every other line
    have as many fields (MRPC, SICK); anything else is a ValueError naming the file and line."""
    lines = _read_lines(path, encoding)
    found = tuple(lines[0].strip().split("\t")) if lines else ()
    if found != header:
        raise ValueError(f"{path}, line 1: expected the header {'<TAB>'.join(header)}, got {found!r}")
    for lineno, line in enumerate(lines[1:], start=2):
        fields = line.strip().split("\t")
        if len(fields) != len(header):
            raise ValueError(
                f"{path}, line {lineno}: expected {len(header)} tab-separated fields, got {len(fields)}"
            )
        yield lineno, fields


def read_mrpc(data_dir: Path) -> dict[str, LabelledPairs]:
    """MRPC train/test: a header, then ``Quality<TAB>#1 ID<TAB>#2 ID<TAB>#1 String<TAB>#2 String``."""
    splits = {}
    for split, name in MRPC_FILES.items():
        path = data_file(Path(data_dir), "senteval", "MRPC", name)
        first: list[str] = []
        second: list[str] = []
        labels: list[int] = []
        for lineno, fields in _table_rows(path, MRPC_HEADER):
            labels.append(_label(fields[0].strip(), ("0", "1"), path, lineno))
            first.append(_norm(fields[3]))
            second.append(_norm(fields[4]))
        splits[split] = LabelledPairs(first, second, np.asarray(labels, dtype=np.int64))
    return splits


# ---------------------------------------------------------------------- STS: STS12-16, STS-B, SICK-R


def _score(text: str, path: Path, lineno: int) -> float:
    """A gold score; a non-number (or nan/inf) is an error naming file and line."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"{path}, line {lineno}: gold score {text!r} is not a finite number")
    return value


def _read_sts_subset(folder: Path, subset: str) -> list[Pair]:
    """STS.input.<subset>.txt (s1<TAB>s2) + STS.gs.<subset>.txt; a blank gold line drops its pair."""
    input_path = data_file(folder, f"STS.input.{subset}.txt")
    gold_path = data_file(folder, f"STS.gs.{subset}.txt")
    inputs, golds = _read_lines(input_path), _read_lines(gold_path)
    if len(inputs) != len(golds):
        raise ValueError(
            f"{input_path} has {len(inputs)} lines but {gold_path} has {len(golds)}: line "
            f"{min(len(inputs), len(golds)) + 1} of the longer file has no partner (they pair line by line)"
        )
    pairs: list[Pair] = []
    for lineno, (line, gold) in enumerate(zip(inputs, golds, strict=True), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise ValueError(
                f"{input_path}, line {lineno}: expected 2 tab-separated sentences, got {len(fields)} fields"
            )
        if gold.strip():
            pairs.append((_norm(fields[0]), _norm(fields[1]), _score(gold.strip(), gold_path, lineno)))
    return pairs


def _read_stsb(path: Path, genre: str | None = None) -> list[Pair]:
    """genre, file, year, id, score, sentence1, sentence2 [, extra columns ignored]; quotes are literal.
    ``genre`` (e.g. "main-captions"): that genre's pairs only."""
    pairs: list[Pair] = []
    for lineno, line in enumerate(_read_lines(path), start=1):
        fields = line.strip().split("\t")
        if len(fields) < 7:
            raise ValueError(
                f"{path}, line {lineno}: expected at least 7 tab-separated fields, got {len(fields)}"
            )
        if genre is None or fields[0] == genre:
            pairs.append((_norm(fields[5]), _norm(fields[6]), _score(fields[4], path, lineno)))
    return pairs


def read_stsb_genre(data_dir: Path, split: str, genre: str) -> list[Pair]:
    """The STS-B pairs of one split ("train", "dev", "test") and one genre (STSB_GENRES): [(s1, s2, gold)]."""
    if genre not in STSB_GENRES:
        raise ValueError(f"unknown STS-B genre {genre!r}; valid: {', '.join(STSB_GENRES)}")
    if split not in STSB_FILES:
        raise ValueError(f"STSBenchmark has no split {split!r}; valid: {', '.join(STSB_FILES)}")
    return _read_stsb(data_file(Path(data_dir) / "senteval", "STS", "STSBenchmark", STSB_FILES[split]), genre)


def _read_sick(path: Path) -> list[Pair]:
    """Header pair_ID, sentence_A, sentence_B, relatedness_score, entailment_judgment; then one pair a line."""
    return [
        (_norm(fields[1]), _norm(fields[2]), _score(fields[3], path, lineno))
        for lineno, fields in _table_rows(path, SICK_HEADER)
    ]


def load_sts_task(data_dir: Path, task: str, split: str = "test") -> dict[str, list[Pair]]:
    """Subset name -> [(s1, s2, gold)]; STS-B/SICK-R have one subset named after the split.

    Splits: STS12-16 only "test"; STS-B and SICK-R "train", "dev" (SICK: the trial file), "test".
    """
    root = Path(data_dir) / "senteval"
    if task in STS_YEARS:
        if split != "test":
            raise ValueError(f"{task} has only a 'test' split, got split={split!r}")
        folder, subsets = STS_YEARS[task]
        return {subset: _read_sts_subset(data_file(root, "STS", folder), subset) for subset in subsets}
    files = {"STSBenchmark": STSB_FILES, "SICKRelatedness": SICK_FILES}.get(task)
    if files is None:
        raise ValueError(f"unknown STS task {task!r}; valid: {', '.join(STS_TASKS)}")
    if split not in files:
        raise ValueError(f"{task} has no split {split!r}; valid: {', '.join(files)}")
    if task == "STSBenchmark":
        return {split: _read_stsb(data_file(root, "STS", "STSBenchmark", files[split]))}
    return {split: _read_sick(data_file(root, "SICK", files[split]))}
