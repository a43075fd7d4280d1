"""Readers for SentEval's transfer tasks (MR, CR, SUBJ, MPQA, SST-2, TREC, MRPC), in SentEval's layout.

Every reader mirrors what SentEval's own loader reads, so the counts match SentEval's: MR 10662,
CR 3775, SUBJ 10000, MPQA 10606, SST-2 67349/872/1821, TREC 5452/500, MRPC 4076/1725.
Sentences are whitespace-normalised (SentEval splits on whitespace; SimCSE's batcher re-joins the
tokens with one space). Encodings follow SentEval: latin-1 for MR/CR/SUBJ/MPQA/TREC (TREC's train
file has one non-UTF-8 byte), UTF-8 for SST-2 and MRPC (MRPC's byte-order mark is ignored).

Blank lines: CR (4) and MPQA (3) contain blank lines, which SentEval keeps as empty sentences with
the file's label; we keep them too (the counts above include them). Anywhere else a line that does
not parse is a ``ValueError`` naming the file, the line number and the problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sentcl.paths import data_file

# task -> (folder, file labelled 1, file labelled 0); SentEval's BinaryClassifierEval(pos, neg) order.
BINARY_FILES: dict[str, tuple[str, str, str]] = {
    "MR": ("MR", "rt-polarity.pos", "rt-polarity.neg"),
    "CR": ("CR", "custrev.pos", "custrev.neg"),
    "SUBJ": ("SUBJ", "subj.objective", "subj.subjective"),
    "MPQA": ("MPQA", "mpqa.pos", "mpqa.neg"),
}
SST2_FILES = {"train": "sentiment-train", "dev": "sentiment-dev", "test": "sentiment-test"}
TREC_FILES = {"train": "train_5500.label", "test": "TREC_10.label"}
TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
MRPC_FILES = {"train": "msr_paraphrase_train.txt", "test": "msr_paraphrase_test.txt"}
MRPC_HEADER = ("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String")


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


def _norm(sentence: str) -> str:
    """SentEval tokenises with str.split(); SimCSE's batcher joins the tokens with one space."""
    return " ".join(sentence.split())


def _read_lines(path: Path, encoding: str) -> list[str]:
    """Lines split on '\\n' ('\\r' dropped); the final newline ends the last line, it starts none."""
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
            raise ValueError(f"{path}, line {lineno}: not valid {encoding} ({err})") from err
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


def read_sst2(data_dir: Path) -> dict[str, LabelledSentences]:
    """SST-2 (binary) train/dev/test: ``sentence<TAB>label`` with label 0 or 1."""
    splits = {}
    for split, name in SST2_FILES.items():
        path = data_file(Path(data_dir), "senteval", "SST", "binary", name)
        texts: list[str] = []
        labels: list[int] = []
        for lineno, line in enumerate(_read_lines(path, "utf-8"), start=1):
            fields = line.strip().split("\t")
            if len(fields) != 2:
                raise ValueError(
                    f"{path}, line {lineno}: expected 'sentence<TAB>label', got {len(fields)} field(s)"
                )
            texts.append(_norm(fields[0]))
            labels.append(_label(fields[1].strip(), ("0", "1"), path, lineno))
        splits[split] = LabelledSentences(texts, np.asarray(labels, dtype=np.int64))
    return splits


def read_trec(data_dir: Path) -> dict[str, LabelledSentences]:
    """TREC train/test: ``COARSE:fine question``; the class is the coarse label (6 classes, TREC_CLASSES)."""
    splits = {}
    for split, name in TREC_FILES.items():
        path = data_file(Path(data_dir), "senteval", "TREC", name)
        texts: list[str] = []
        labels: list[int] = []
        for lineno, line in enumerate(_read_lines(path, "latin-1"), start=1):
            coarse, sep, rest = line.strip().partition(":")
            fine_and_question = rest.split(" ", 1)
            if not sep or len(fine_and_question) != 2 or not fine_and_question[1].strip():
                raise ValueError(f"{path}, line {lineno}: expected 'COARSE:fine question', got {line[:60]!r}")
            texts.append(_norm(fine_and_question[1]))
            labels.append(_label(coarse, TREC_CLASSES, path, lineno))
        splits[split] = LabelledSentences(texts, np.asarray(labels, dtype=np.int64))
    return splits


def read_mrpc(data_dir: Path) -> dict[str, LabelledPairs]:
    """MRPC train/test: a header, then ``Quality<TAB>#1 ID<TAB>#2 ID<TAB>#1 String<TAB>#2 String``."""
    splits = {}
    for split, name in MRPC_FILES.items():
        path = data_file(Path(data_dir), "senteval", "MRPC", name)
        lines = _read_lines(path, "utf-8")
        header = tuple(lines[0].strip().split("\t")) if lines else ()
        if header != MRPC_HEADER:
            raise ValueError(
                f"{path}, line 1: expected the header {'<TAB>'.join(MRPC_HEADER)}, got {header!r}"
            )
        first: list[str] = []
        second: list[str] = []
        labels: list[int] = []
        for lineno, line in enumerate(lines[1:], start=2):
            fields = line.strip().split("\t")
            if len(fields) != len(MRPC_HEADER):
                raise ValueError(
                    f"{path}, line {lineno}: expected {len(MRPC_HEADER)} tab-separated fields, got {len(fields)}"
                )
            labels.append(_label(fields[0].strip(), ("0", "1"), path, lineno))
            first.append(_norm(fields[3]))
            second.append(_norm(fields[4]))
        splits[split] = LabelledPairs(first, second, np.asarray(labels, dtype=np.int64))
    return splits
