"""The real-text corpus of ``bench/index.py --real``: every distinct sentence available offline.

Sources under the data folder (``$SENTCL_DATA``): the wiki prefix, SNLI premises and hypotheses, the
SentEval transfer tasks (MR, CR, SUBJ, MPQA, SST binary and fine, TREC, MRPC), SICK and the STS tasks.
The queries are the distinct sentences of the STS-B test split; they are left out of the corpus, so no
query finds itself. Sentences are stripped; empty ones and exact duplicates are dropped; the corpus keeps
first-seen order (sources in the order above), so the file is the same on every run.

    python -m bench.index_corpus --output runs/bench-real     # writes corpus.txt and queries.txt
"""

from __future__ import annotations

import argparse
import csv
from collections.abc import Iterator
from pathlib import Path

from sentcl.defaults import DATA_DIR_DEFAULT, DATA_ENV


def _lines(path: Path) -> Iterator[str]:
    with open(path, "rb") as handle:
        for raw in handle:
            yield raw.decode("utf-8", errors="replace").strip()


def _columns(path: Path, columns: tuple[int, ...], skip_header: bool) -> Iterator[str]:
    for i, line in enumerate(_lines(path)):
        if skip_header and i == 0:
            continue
        fields = line.split("\t")
        for c in columns:
            if c < len(fields):
                yield fields[c]


def _sts_b(path: Path) -> Iterator[str]:
    with open(path, encoding="utf-8", errors="replace") as handle:
        for row in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
            if len(row) >= 7:
                yield row[5].strip()
                yield row[6].strip()


def corpus_sources(data: Path) -> Iterator[str]:
    """Every sentence of every source but the STS-B test split, in a fixed order (duplicates included)."""
    se = data / "senteval"
    yield from _lines(data / "corpora" / "wiki1m_prefix.txt")
    for split in ("dev", "test"):
        for side in ("s1", "s2"):
            yield from _lines(se / "SNLI" / f"{side}.{split}")
    for rel in ("MR/rt-polarity.pos", "MR/rt-polarity.neg", "CR/custrev.pos", "CR/custrev.neg"):
        yield from _lines(se / rel)
    for rel in ("SUBJ/subj.objective", "SUBJ/subj.subjective", "MPQA/mpqa.pos", "MPQA/mpqa.neg"):
        yield from _lines(se / rel)
    for kind in ("binary", "fine"):
        for split in ("train", "dev", "test"):
            yield from _columns(se / "SST" / kind / f"sentiment-{split}", (0,), skip_header=False)
    for rel in ("TREC/train_5500.label", "TREC/TREC_10.label"):
        yield from (line.split(" ", 1)[1] if " " in line else line for line in _lines(se / rel))
    for rel in ("MRPC/msr_paraphrase_train.txt", "MRPC/msr_paraphrase_test.txt"):
        yield from _columns(se / rel, (3, 4), skip_header=True)
    for rel in ("SICK/SICK_train.txt", "SICK/SICK_trial.txt", "SICK/SICK_test_annotated.txt"):
        yield from _columns(se / rel, (1, 2), skip_header=True)
    for split in ("train", "dev"):
        yield from _sts_b(se / "STS" / "STSBenchmark" / f"sts-{split}.csv")
    for task in sorted((se / "STS").glob("STS1*-en-test")):
        for path in sorted(task.glob("STS.input.*.txt")):
            yield from _columns(path, (0, 1), skip_header=False)


def distinct(items: Iterator[str], exclude: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
    seen: set[str] = set()
    out: list[str] = []
    for s in items:
        s = " ".join(s.split())  # one line each, whitespace collapsed
        if s and s not in seen and s not in exclude:
            seen.add(s)
            out.append(s)
    return out


def build(data: Path, output: Path) -> tuple[Path, Path, int, int]:
    """corpus.txt and queries.txt under ``output``: (corpus path, queries path, corpus rows, query rows)."""
    queries = distinct(_sts_b(data / "senteval" / "STS" / "STSBenchmark" / "sts-test.csv"))
    corpus = distinct(corpus_sources(data), exclude=set(queries))
    output.mkdir(parents=True, exist_ok=True)
    corpus_path, query_path = output / "corpus.txt", output / "queries.txt"
    for path, rows in ((corpus_path, corpus), (query_path, queries)):
        text = "\n".join(rows) + "\n"
        if not path.exists() or path.read_text(encoding="utf-8") != text:  # keep mtime: the shards resume
            path.write_text(text, encoding="utf-8")
    return corpus_path, query_path, len(corpus), len(queries)


def main(argv: list[str] | None = None) -> None:
    import os

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=os.environ.get(DATA_ENV, str(Path(*DATA_DIR_DEFAULT))))
    p.add_argument("--output", default="runs/bench-real")
    args = p.parse_args(argv)
    corpus, queries, n, q = build(Path(args.data_dir), Path(args.output))
    print(f"{corpus}: {n} sentences; {queries}: {q} queries")


if __name__ == "__main__":
    main()
