"""``sentcl build-corpus english``: every distinct English sentence of the data folder, one a line
(sentcl.data.offline_english), written atomically, with the count of each source."""

from __future__ import annotations

import argparse

from sentcl.cli.options import add_data_dir, add_overwrite
from sentcl.files.kinds import write_path
from sentcl.files.output import Input, claim_file


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "build-corpus",
        help="Write every distinct English sentence of the data folder (a distillation corpus).",
        description="Sources: the wiki prefix, SNLI dev/test, the SentEval transfer tasks (MR, CR, SUBJ, MPQA, "
        "SST, TREC, MRPC), SICK train/trial, STS-B train, and unless excluded STS-B dev and the STS test sets "
        "(STS12-16, STS-B test, SICK test). Whitespace-normalised, exact duplicates dropped, first-seen order.",
    )
    p.add_argument(
        "kind", choices=("english",), help="Which corpus (english: the data folder's English text)."
    )
    p.add_argument(
        "--out", "--output", dest="output", type=write_path, required=True, help="Text file to write."
    )
    p.add_argument(
        "--exclude-sts-test",
        action="store_true",
        help="Leave out every sentence of the STS test sets (STS12-16, STS-B test, SICK test), wherever it "
        "occurs.",
    )
    p.add_argument(
        "--exclude-stsb-dev", action="store_true", help="Leave out every sentence of STS-B dev as well."
    )
    add_data_dir(p)
    add_overwrite(p, "file at --out")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from sentcl.data.offline_english import offline_english_sentences
    from sentcl.files.atomic import atomic_write_text
    from sentcl.files.paths import resolve_data_dir

    data = resolve_data_dir(args.data_dir)
    read = [Input(data / part, "--data-dir") for part in ("senteval", "corpora") if (data / part).is_dir()]
    claim_file(args.output, "--out", read, overwrite=args.overwrite)  # beside them in the data folder: fine
    corpus = offline_english_sentences(data, args.exclude_sts_test, args.exclude_stsb_dev)
    atomic_write_text(args.output, "".join(s + "\n" for s in corpus.sentences))
    width = max(map(len, corpus.counts))
    print(f"{'source':<{width}}  distinct  added  excluded")
    for source, count in corpus.counts.items():
        print(f"{source:<{width}}  {count.distinct:>8}  {count.added:>5}  {count.excluded:>8}")
    left_out = ", ".join(corpus.excluded_sources) or "none"
    print(f"wrote {args.output}: {len(corpus.sentences)} sentences (sources left out: {left_out})")
    return 0
