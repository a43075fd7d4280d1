"""``sentcl build-nli``: supervised-SimCSE triples (nli_for_simcse.csv) from SentEval's SNLI folder."""

from __future__ import annotations

import argparse

from sentcl.cli.options import add_data_dir, add_overwrite
from sentcl.files.kinds import name_value, read_folder, write_path
from sentcl.files.output import Input, claim_file
from sentcl.files.paths import resolve_data_dir


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "build-nli", help="Build supervised-SimCSE triples (nli_for_simcse.csv) from SentEval's SNLI."
    )
    p.add_argument(
        "--senteval-snli", type=read_folder, help="SentEval SNLI folder (default: <data-dir>/senteval/SNLI)."
    )
    add_data_dir(p)
    p.add_argument(
        "--splits",
        type=name_value,
        nargs="+",
        default=["dev", "test"],
        help="Splits to read (s1.<split>, ...).",
    )
    p.add_argument(
        "--output", type=write_path, required=True, help="CSV to write (header sent0,sent1,hard_neg)."
    )
    p.add_argument("--with-neutral", action="store_true", help="Add a neutral hypothesis as a 4th column.")
    add_overwrite(p, "CSV at --output")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from sentcl.data.nli import build_nli_from_senteval

    folder = args.senteval_snli or resolve_data_dir(args.data_dir, ["senteval"]) / "senteval" / "SNLI"
    claim_file(args.output, "--output", [Input(folder, "--senteval-snli")], overwrite=args.overwrite)
    stats = build_nli_from_senteval(folder, args.splits, args.output, with_neutral=args.with_neutral)
    skipped = ", ".join(f"{k.removeprefix('skipped_')}: {v}" for k, v in stats.skipped().items() if v)
    print(
        f"{stats.records} records, {stats.premises} premises -> {stats.triples} examples written to "
        f"{args.output}; skipped premises/records: {skipped or 'none'}"
    )
    return 0
