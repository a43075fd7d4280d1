"""``sentcl eval --pairs FILE`` and ``--retrieval DIR``: the user's own evaluation sets (options and running)."""

from __future__ import annotations

import argparse
from typing import Any

from sentcl.files.kinds import name_value, names_value, number_range, read_file, read_folder


def add_user_data_options(p: argparse.ArgumentParser) -> None:
    from sentcl.config.names import DEFAULT_ZERO_JUDGED, ZERO_JUDGED

    p.add_argument(
        "--pairs",
        type=read_file,
        action="append",
        default=[],
        metavar="FILE",
        help="STS-style pairs file (TSV, CSV or JSONL; any language): Spearman and Pearson of cosine x100. "
        "Repeatable.",
    )
    p.add_argument(
        "--columns",
        type=names_value,
        metavar="S1,S2,SCORE",
        help="Columns of --pairs by header name or 0-based index (default: detected from the header or values).",
    )
    p.add_argument(
        "--score-range",
        type=number_range,
        metavar="LO,HI",
        help="Expected score range of --pairs; a score outside it is an error (default: detected, reported).",
    )
    p.add_argument(
        "--format", dest="table_format", choices=("tsv", "csv", "jsonl"), help="Format of --pairs."
    )
    p.add_argument(
        "--retrieval",
        type=read_folder,
        action="append",
        default=[],
        metavar="DIR",
        help="BEIR-layout folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv): nDCG@10, MRR@10, Recall@100.",
    )
    p.add_argument(
        "--split", type=name_value, default="test", help="qrels split of --retrieval (default test)."
    )
    p.add_argument(
        "--zero-judged",
        choices=ZERO_JUDGED,
        default=DEFAULT_ZERO_JUDGED,
        help="A --retrieval query judged only with score 0: keep it, counted with 0 (BEIR's mean; default), "
        "or drop it from the means. The output gives the choice and the count.",
    )


def read_user_data(args: argparse.Namespace) -> list[tuple[str, Any]]:
    """Read every --pairs file and --retrieval folder (a bad one fails here, before the model loads)."""
    from sentcl.data.scored_pairs import read_pairs
    from sentcl.evaluation.pairs import parse_columns, parse_range
    from sentcl.evaluation.retrieval_eval import read_beir

    columns, score_range = parse_columns(args.columns), parse_range(args.score_range)
    if (columns or score_range or args.table_format) and not args.pairs:
        raise ValueError("--columns, --score-range and --format describe a --pairs file; give --pairs FILE")
    found: list[tuple[str, Any]] = [
        (f"pairs:{path}", read_pairs(path, columns, score_range, args.table_format)) for path in args.pairs
    ]
    found += [(f"retrieval:{path}", read_beir(path, args.split, args.zero_judged)) for path in args.retrieval]
    return found


def evaluate_user_data(
    model: Any, encode: Any, user_data: list[tuple[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Task name -> result; pairs files first get a tokenizer check (the [UNK] share, Hangul decomposition)."""
    from sentcl.data.scored_pairs import PairsFile
    from sentcl.evaluation.pairs import score_pairs, warn_if_mangled
    from sentcl.evaluation.retrieval_eval import score_retrieval

    results: dict[str, dict[str, Any]] = {}
    tokenizer = getattr(model, "tokenizer", None)
    for name, data in user_data:
        if isinstance(data, PairsFile):
            results[name] = score_pairs(encode, data)
            if tokenizer is not None:
                sentences = [s for pair in data.pairs for s in pair[:2]]
                results[name]["unk_rate"] = warn_if_mangled(tokenizer, sentences, str(data.path))["unk_rate"]
        else:
            results[name] = score_retrieval(encode, data)
    return results
