"""``sentcl mine``: hard negatives for (anchor, positive) pairs -> ``sent0,sent1,hard_neg`` CSV."""

from __future__ import annotations

import argparse
import logging

from sentcl.cli.option_rules import declare as declare_rules
from sentcl.cli.option_rules import excludes
from sentcl.cli.options import (
    add_engine_options,
    add_model_options,
    add_overwrite,
    load_model,
    model_spec,
    positive_int,
    settings_from_args,
)
from sentcl.config.names import MINING_SAMPLING
from sentcl.files.kinds import (
    finite_float,
    name_value,
    read_file,
    read_index_location,
    whole_number,
    write_path,
)
from sentcl.files.output import Input, claim_file, model_input

logger = logging.getLogger("sentcl")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mine", help="Mine hard negatives for (anchor, positive) pairs into supervised SimCSE's CSV."
    )
    add_model_options(p)
    p.add_argument(
        "--pairs", required=True, type=read_file, help="Pairs file: .csv, .tsv (with a header) or .jsonl."
    )
    p.add_argument("--output", required=True, type=write_path, help="Output CSV: sent0,sent1,hard_neg.")
    p.add_argument(
        "--corpus", type=read_file, help="Extra candidate texts, one a line (besides the positives)."
    )
    p.add_argument(
        "--index",
        type=read_index_location,
        metavar="INDEX",
        help="Mine from an index built by sentcl index build (a faiss folder, or a store: a folder or "
        "s3://bucket/prefix): its texts are the candidates, instead of the positives and --corpus.",
    )
    p.add_argument(
        "--anchor-column", type=name_value, help="Anchor column (default: anchor, sent0 or query)."
    )
    p.add_argument("--positive-column", type=name_value, help="Positive column (default: positive or sent1).")
    p.add_argument("--num-negatives", type=positive_int, default=3, help="Negatives per anchor (default 3).")
    p.add_argument(
        "--range-min", type=whole_number, default=0, help="Skip this many top candidates (default 0)."
    )
    p.add_argument(
        "--range-max", type=positive_int, help="Consider candidates ranked below this (default: see README)."
    )
    p.add_argument("--max-score", type=finite_float, help="Drop candidates with cosine above this.")
    p.add_argument("--min-score", type=finite_float, help="Drop candidates with cosine below this.")
    p.add_argument(
        "--absolute-margin",
        type=finite_float,
        help="Keep a negative only if cos + margin <= the positive's cos.",
    )
    p.add_argument(
        "--relative-margin",
        type=finite_float,
        help="Keep a negative only if cos <= pos - |pos|·margin (e.g. 0.05).",
    )
    p.add_argument(
        "--sampling", choices=MINING_SAMPLING, default="top", help="top candidates, or a random sample."
    )
    p.add_argument(
        "--include-anchor-text",
        action="store_true",
        help="Allow a corpus text equal to the anchor as a negative (sentence-transformers' behaviour).",
    )
    p.add_argument("--seed", type=whole_number, default=0, help="Seed of --sampling random.")
    add_engine_options(p)
    add_overwrite(p, "CSV at --output")
    p.set_defaults(func=handle)
    declare_rules(
        p,
        excludes(
            "--corpus",
            "--index",
            "the candidates are the positives and --corpus's extra sentences, or an index's texts",
        ),
    )


def handle(args: argparse.Namespace) -> int:
    from sentcl.data.nli import write_nli_csv
    from sentcl.engines import EngineEncoder, open_engine
    from sentcl.index.mining import MiningSettings, mine_pairs, read_corpus_file
    from sentcl.index.pairs import read_pairs

    settings = settings_from_args(MiningSettings, args, exclude_anchor=not args.include_anchor_text)
    settings.window(1)  # validate the options before loading anything
    inputs = [Input(args.pairs, "--pairs"), *model_input(args.model)]
    inputs += [Input(args.corpus, "--corpus")] if args.corpus else []
    claim_file(args.output, "--output", inputs, overwrite=args.overwrite)  # before the corpus is encoded
    pairs = read_pairs(args.pairs, args.anchor_column, args.positive_column)
    extra = read_corpus_file(args.corpus) if args.corpus else None
    if args.index is not None:  # the candidates' vectors are the index's: only the anchors are encoded, here
        from sentcl.index import open_index
        from sentcl.index.mining_index import mine_pairs_in_index

        triples, stats = mine_pairs_in_index(
            load_model(args),
            args.model,
            pairs,
            settings,
            open_index(args.index),
            args.batch_size,
            args.max_length,
        )
    else:
        engine = open_engine(args.engine, args.ray_address)
        try:  # the anchors and the candidates, encoded by the chosen engine
            model = EngineEncoder(engine, model_spec(args))
            triples, stats = mine_pairs(model, pairs, settings, extra, args.batch_size, args.max_length)
        finally:
            engine.close()
    if stats["anchors_short_of_negatives"]:
        logger.warning(
            "%d of %d anchors got fewer than %d negatives (filters removed: %s); widen --range-max or relax "
            "the margins",
            stats["anchors_short_of_negatives"],
            stats["anchors"],
            args.num_negatives,
            ", ".join(f"{k} {v}" for k, v in stats["removed"].items() if v),
        )
    write_nli_csv(triples, args.output)
    print(
        f"wrote {len(triples)} (sent0, sent1, hard_neg) rows for {stats['anchors']} anchors to {args.output}"
    )
    return 0
