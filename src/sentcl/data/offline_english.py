"""Every distinct English sentence available offline in the data folder: a training corpus for distillation.

Sources, in this order (the output keeps first-seen order, so it is the same file on every run):

| source | files (below the data folder) |
| --- | --- |
| wiki | corpora/wiki1m_prefix.txt |
| snli | senteval/SNLI/s1.dev, s2.dev, s1.test, s2.test |
| mr, cr, subj, mpqa | the SentEval binary tasks' two files each |
| sst | senteval/SST/binary and fine, sentiment-{train,dev,test} (the sentence before the tab) |
| trec | senteval/TREC/train_5500.label, TREC_10.label (the question after the label) |
| mrpc | senteval/MRPC/msr_paraphrase_{train,test}.txt (both strings) |
| sick | senteval/SICK/SICK_train.txt, SICK_trial.txt (both sentences) |
| stsb_train | senteval/STS/STSBenchmark/sts-train.csv |
| stsb_dev | senteval/STS/STSBenchmark/sts-dev.csv (left out with ``exclude_stsb_dev``) |
| sts_test | every STS.input.*.txt of STS12-16, sts-test.csv, SICK_test_annotated.txt (left out with ``exclude_sts_test``) |

A sentence is whitespace-normalised (stripped, inner runs of whitespace to one space: SentEval's evaluators read
the STS files so), and empty ones are dropped; duplicates are dropped exactly on that form. Leaving a source out
removes its sentences *everywhere*: an STS test sentence that also appears in SNLI or SICK train is not in the
output, so a corpus built with ``exclude_sts_test`` holds no sentence the STS evaluation scores.

Files are read as UTF-8; a file that is not valid UTF-8 is read as Latin-1 (SentEval's encoding for TREC, whose
training file has one such byte). ``offline_english_sentences`` returns the sentences and, per source, how many
distinct sentences it holds, how many it adds to the output, and how many it loses to the exclusions.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sentcl.data.readers import Corpus, DataFormatError, require_file
from sentcl.data.scored_pairs import normalize_spaces
from sentcl.data.senteval_files import BINARY_FILES, MRPC_FILES, SST2_FILES, TREC_FILES

SE = "senteval"
STS_TEST = "sts_test"
STSB_DEV = "stsb_dev"


def _text_lines(path: Path) -> list[str]:
    require_file(path, "corpus source")
    raw = path.read_bytes().removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark (MRPC)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")  # SentEval's encoding of TREC (one non-UTF-8 byte in train_5500.label)
    return text.splitlines()


def _lines(*paths: Path) -> Iterator[str]:
    for path in paths:
        yield from _text_lines(path)


def _columns(paths: list[Path], columns: tuple[int, ...], header: bool, minimum: int) -> Iterator[str]:
    """Tab-separated fields ``columns`` of every line (the first skipped when ``header``); a line with fewer
    than ``minimum`` fields is an error naming the file and line."""
    for path in paths:
        for lineno, line in enumerate(_text_lines(path), start=1):
            if (header and lineno == 1) or not line.strip():
                continue
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) < minimum:
                raise DataFormatError(
                    f"{path}:{lineno}: expected at least {minimum} tab-separated fields, got {len(fields)}"
                )
            yield from (fields[c] for c in columns)


def _after_label(paths: list[Path]) -> Iterator[str]:
    """TREC: ``LABEL:fine question`` -> the question."""
    for line in _lines(*paths):
        if line.strip():
            yield line.split(" ", 1)[1] if " " in line.strip() else ""


def stsb_split(data: Path, split: str) -> Iterator[str]:
    """Both sentences of every row of STS-B's ``split`` (train, dev, test), raw, in file order."""
    return _columns(
        [data / SE / "STS" / "STSBenchmark" / f"sts-{split}.csv"], (5, 6), header=False, minimum=7
    )


def _sts_test(data: Path) -> Iterator[str]:
    se = data / SE
    folders = sorted((se / "STS").glob("STS1[2-6]-en-test"))
    if not folders:
        raise DataFormatError(f"{se / 'STS'}: no STS12-en-test ... STS16-en-test folder")
    for folder in folders:
        yield from _columns(sorted(folder.glob("STS.input.*.txt")), (0, 1), header=False, minimum=2)
    yield from stsb_split(data, "test")
    yield from _columns([se / "SICK" / "SICK_test_annotated.txt"], (1, 2), header=True, minimum=3)


def _binary(folder: str, *names: str) -> Callable[[Path], Iterator[str]]:
    return lambda data: _lines(*(data / SE / folder / n for n in names))


#: source name -> the sentences of its files under the data folder, in a fixed order
SOURCES: dict[str, Callable[[Path], Iterator[str]]] = {
    "wiki": lambda data: _lines(data / "corpora" / "wiki1m_prefix.txt"),
    "snli": lambda data: _lines(
        *(data / SE / "SNLI" / f"{side}.{split}" for split in ("dev", "test") for side in ("s1", "s2"))
    ),
    "mr": _binary(*BINARY_FILES["MR"]),
    "cr": _binary(*BINARY_FILES["CR"]),
    "subj": _binary(*BINARY_FILES["SUBJ"]),
    "mpqa": _binary(*BINARY_FILES["MPQA"]),
    "sst": lambda data: _columns(
        [data / SE / "SST" / kind / name for kind in ("binary", "fine") for name in SST2_FILES.values()],
        (0,),
        header=False,
        minimum=1,
    ),
    "trec": lambda data: _after_label([data / SE / "TREC" / n for n in TREC_FILES.values()]),
    "mrpc": lambda data: _columns([data / SE / "MRPC" / n for n in MRPC_FILES.values()], (3, 4), True, 5),
    "sick": lambda data: _columns(
        [data / SE / "SICK" / n for n in ("SICK_train.txt", "SICK_trial.txt")], (1, 2), True, 3
    ),
    "stsb_train": lambda data: stsb_split(data, "train"),
    STSB_DEV: lambda data: stsb_split(data, "dev"),
    STS_TEST: _sts_test,
}


@dataclass
class SourceCount:
    distinct: int = 0  # distinct sentences of the source
    added: int = 0  # of them, new in the output (not in an earlier source, not excluded)
    excluded: int = 0  # of them, left out because an excluded source holds them too


@dataclass
class OfflineCorpus:
    sentences: list[str]
    counts: dict[str, SourceCount] = field(default_factory=dict)
    excluded_sources: tuple[str, ...] = ()


def source_sentences(data: Path, source: str) -> set[str]:
    """The distinct normalised, non-empty sentences of one source."""
    if source not in SOURCES:
        raise ValueError(f"unknown corpus source {source!r}; valid: {', '.join(SOURCES)}")
    return {s for s in map(normalize_spaces, SOURCES[source](data)) if s}


def offline_english_sentences(
    data: Path, exclude_sts_test: bool = False, exclude_stsb_dev: bool = False
) -> OfflineCorpus:
    """Every distinct sentence of the data folder's English sources (see the module doc), in order."""
    excluded = tuple(s for s, flag in ((STS_TEST, exclude_sts_test), (STSB_DEV, exclude_stsb_dev)) if flag)
    banned: set[str] = set()
    for source in excluded:
        banned |= source_sentences(Path(data), source)
    seen: set[str] = set()
    out: list[str] = []
    counts: dict[str, SourceCount] = {}
    for source, read in SOURCES.items():
        if source in excluded:
            continue
        count = counts[source] = SourceCount()
        mine: set[str] = set()
        for sentence in map(normalize_spaces, read(Path(data))):
            if not sentence or sentence in mine:
                continue
            mine.add(sentence)
            if sentence in banned:
                count.excluded += 1
            elif sentence not in seen:
                seen.add(sentence)
                out.append(sentence)
                count.added += 1
        count.distinct = len(mine)
    return OfflineCorpus(out, counts, excluded)


#: the seed of the training reader's one fixed order (read_offline_english)
READER_ORDER_SEED = 0


def read_offline_english(folder: str | Path, max_examples: int | None = None) -> Corpus:
    """The training reader ``offline_english``: ``data.train_file`` names the data folder itself (``.``), and
    the examples are every distinct English sentence in it outside the evaluation's sentences (the STS test
    sets and STS-B dev), in one fixed shuffled order (seed 0), so that ``data.max_examples`` takes a sample of
    every source rather than the first ones; the sampler shuffles again per epoch. What was left out is
    counted."""
    corpus = offline_english_sentences(Path(folder), exclude_sts_test=True, exclude_stsb_dev=True)
    excluded = sum(count.excluded for count in corpus.counts.values())
    sentences = list(corpus.sentences)
    random.Random(READER_ORDER_SEED).shuffle(sentences)
    return Corpus(Path(folder), sentences[:max_examples], {"evaluation_sentences": excluded})
