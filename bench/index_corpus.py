"""The real-text corpus of ``bench/index.py --real``: every distinct sentence available offline.

The sentences are ``sentcl.data.offline_english``'s (one gatherer for the training reader, ``sentcl
build-corpus`` and this bench): the wiki prefix, SNLI premises and hypotheses, the SentEval transfer tasks
(MR, CR, SUBJ, MPQA, SST binary and fine, TREC, MRPC), SICK and the STS tasks, whitespace-normalised,
duplicates dropped, in first-seen order (so the file is the same on every run). The queries are the
distinct sentences of the STS-B test split; they are left out of the corpus, so no query finds itself (the
other STS test sets and SICK test stay in the corpus: this is a search bench, not an STS evaluation).

    python -m bench.index_corpus --output runs/bench-real     # writes corpus.txt and queries.txt

203,364 corpus sentences and 2,551 queries on the shared data folder.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sentcl.data.offline_english import offline_english_sentences, stsb_split
from sentcl.data.scored_pairs import normalize_spaces
from sentcl.defaults import DATA_DIR_DEFAULT, DATA_ENV


def stsb_test_sentences(data: Path) -> list[str]:
    """The distinct sentences of STS-B test (both columns), in file order."""
    return [s for s in dict.fromkeys(map(normalize_spaces, stsb_split(data, "test"))) if s]


def build(data: Path, output: Path) -> tuple[Path, Path, int, int]:
    """corpus.txt and queries.txt under ``output``: (corpus path, queries path, corpus rows, query rows)."""
    queries = stsb_test_sentences(data)
    banned = set(queries)
    corpus = [s for s in offline_english_sentences(data).sentences if s not in banned]
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
