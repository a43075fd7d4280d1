"""The static students' corpus as a text file, for a peer that reads one (``bench/static_peers.py --corpus``): the
first ``--sentences`` distinct sentences of the offline English corpus, in the order ``sentcl distill-static
--set max_sentences=N`` fits on (``sentcl.methods.static_student.corpus_sentences``), one a line.

    python -m bench.static_corpus --sentences 10000 --output runs/static/corpus-10k.txt
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sentcl.files.atomic import atomic_write_text
from sentcl.files.paths import resolve_data_dir
from sentcl.methods.static_student import corpus_sentences


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, required=True, help="the first N distinct corpus sentences")
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)
    sentences = corpus_sentences(resolve_data_dir(args.data_dir), args.sentences)
    atomic_write_text(args.output, "".join(f"{s}\n" for s in sentences))
    print(f"wrote {args.output}: {len(sentences):,} sentences")


if __name__ == "__main__":
    main()
