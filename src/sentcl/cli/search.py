"""``sentcl search``: the nearest corpus sentences (cosine) for one or more queries."""

from __future__ import annotations

import argparse
import json
import logging

from sentcl.cli.option_rules import declare as declare_rules
from sentcl.cli.option_rules import needs
from sentcl.cli.options import add_backend, add_batch_size, add_pooler, max_length_arg, positive_int
from sentcl.config.names import SEARCH_BACKENDS
from sentcl.files.kinds import model_name, own_index_location, read_file, text_value

logger = logging.getLogger("sentcl")


def add_parser(sub: argparse._SubParsersAction) -> None:

    p = sub.add_parser("search", help="Nearest corpus sentences (cosine) for one or more queries.")
    p.add_argument(
        "--model", type=model_name, required=True, help="Local folder, hub id or offline short name."
    )
    p.add_argument(
        "--corpus",
        type=read_file,
        help="UTF-8 text file, one sentence a line (not needed with an --index built by sentcl index build).",
    )
    p.add_argument(
        "--query",
        type=text_value,
        action="append",
        default=[],
        metavar="TEXT",
        help="A query sentence (repeatable).",
    )
    p.add_argument("--queries", type=read_file, help="A text file of queries, one a line.")
    p.add_argument("-k", type=positive_int, default=5, help="Hits per query (default 5).")
    p.add_argument(
        "--index",
        type=own_index_location,
        help="Folder to save the corpus embeddings in and reuse them from (rebuilt if corpus or model changed), "
        "or an index built by `sentcl index build`: a faiss folder, or a store (--store: a folder or "
        "s3://bucket/prefix); --corpus is then not needed.",
    )
    p.add_argument("--nprobe", type=positive_int, help="IVF index: cells to search (default: the index's).")
    p.add_argument("--ef-search", type=positive_int, help="HNSW index: search beam (default: the index's).")
    p.add_argument(
        "--refine",
        type=positive_int,
        help="IVF-PQ index: re-score REFINE·k candidates with the exact vectors (default: the index's).",
    )
    p.add_argument(
        "--allow-model-mismatch",
        action="store_true",
        help="Search a built index with a model, pooler, max length or truncation other than its own "
        "(refused by default: the hits would not mean anything).",
    )
    p.add_argument(
        "--index-backend",
        choices=SEARCH_BACKENDS,
        default="auto",
        help="Search cache's index: exact (numpy), faiss, or auto (faiss when installed and the corpus is large).",
    )
    add_pooler(p)
    add_batch_size(p)
    p.add_argument("--max-length", type=max_length_arg, help="Truncate sentences to this many tokens.")
    p.add_argument("--json", action="store_true", help="Print the hits as JSON instead of a table.")
    add_backend(p)
    p.set_defaults(func=handle)
    declare_rules(
        p,
        *(
            needs(option, "--index", why="it sets how an index built by sentcl index build is searched")
            for option in ("--nprobe", "--ef-search", "--refine", "--allow-model-mismatch")
        ),
    )


def handle(args: argparse.Namespace) -> int:
    from sentcl.index import is_ann_index
    from sentcl.index.search import format_hits, hits_json, read_sentences, run_ann_search, run_search

    queries = list(args.query)
    blank = next((i for i, q in enumerate(queries) if not q.strip()), None)
    if blank is not None:  # as the service refuses it: an empty query has no nearest sentence
        raise ValueError(f"--query number {blank + 1} is empty: give the sentence to search for")
    if args.queries:
        queries += read_sentences(args.queries, "queries")[1]
    # the model and encoding options both kinds of search take
    encoding = {
        "k": args.k,
        "pooler": args.pooler,
        "batch_size": args.batch_size,
        "max_length": args.max_length,
        "model_backend": args.model_backend,
    }
    if args.index is not None and is_ann_index(args.index):
        if args.corpus is not None:
            logger.warning(
                "--corpus %s is ignored: %s is a built index over its own corpus", args.corpus, args.index
            )
        hits = run_ann_search(
            args.model,
            args.index,
            queries,
            nprobe=args.nprobe,
            ef_search=args.ef_search,
            refine=args.refine,
            allow_model_mismatch=args.allow_model_mismatch,
            **encoding,
        )
    else:
        if args.corpus is None:
            raise ValueError("--corpus is required unless --index is a folder built by `sentcl index build`")
        hits, built = run_search(
            args.model, args.corpus, queries, index_dir=args.index, backend=args.index_backend, **encoding
        )
        if args.index:
            logger.info("index %s: %s", args.index, "built and saved" if built else "reused")
    print(
        json.dumps(hits_json(queries, hits), indent=2, ensure_ascii=False)
        if args.json
        else format_hits(queries, hits)
    )
    return 0
