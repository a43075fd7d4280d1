"""``sentcl index build|info``: a faiss index over sharded embeddings (``sentcl encode --shard-size``)."""

from __future__ import annotations

import argparse
import json
import logging

from sentcl.cli.option_rules import declare as declare_rules
from sentcl.cli.option_rules import excludes, needs
from sentcl.cli.options import positive_int, settings_from_args
from sentcl.files.kinds import (
    array_file,
    own_folder,
    own_index_location,
    read_folder,
    read_index_location,
    whole_number,
)
from sentcl.files.pathcheck import check_input_dir, check_output_dir
from sentcl.files.slots import declare

logger = logging.getLogger("sentcl")


def add_parser(sub: argparse._SubParsersAction) -> None:
    from sentcl.index.faiss_params import DEFAULT_TARGET_RECALL, HNSW_STORAGES, TYPES, IndexParams
    from sentcl.index.quantized import BINARY_INDEXES

    d = IndexParams()
    p = sub.add_parser("index", help="Build or inspect a faiss ANN index over sharded embeddings.")
    isub = p.add_subparsers(dest="index_command", required=True, metavar="ACTION")
    b = isub.add_parser("build", help="Train on a sample, add shard by shard, save atomically.")
    b.add_argument(
        "--embeddings", required=True, type=read_folder, help="Folder written by sentcl encode --shard-size."
    )
    b.add_argument(
        "--type",
        choices=TYPES,
        default="ivf",
        help="flat (exact), ivf, hnsw, ivfpq, binary (1 bit a dimension, Hamming search, re-scored with the "
        "float vectors of the shards) or int8 (8-bit scalar-quantised, re-scored likewise) (default ivf).",
    )
    b.add_argument("--output", type=own_folder, help="Index folder (default: EMBEDDINGS/index-TYPE).")
    add_store_option(b)
    b.add_argument(
        "--nlist",
        type=positive_int,
        help="ivf/ivfpq: k-means cells (default round(4·√N), at most N // 39 so each cell has 39 training rows).",
    )
    b.add_argument(
        "--target-recall",
        type=recall_target,
        default=DEFAULT_TARGET_RECALL,
        help="ivf/hnsw/ivfpq/binary/int8: pick the cheapest search setting (nprobe, efSearch, refine) whose "
        "recall@10 against exact search reaches this on held-out queries; stored with the measured recall "
        f"and QPS in index.json, used by search and serve (default {DEFAULT_TARGET_RECALL}; 0 turns tuning off).",
    )
    b.add_argument(
        "--queries",
        type=array_file,
        help="A .npy file of query embeddings (Q, D) to tune on, instead of 1,000 of the corpus's own rows.",
    )
    b.add_argument(
        "--nprobe",
        type=positive_int,
        help="ivf/ivfpq: cells searched, fixed instead of tuned (without a target: 32).",
    )
    b.add_argument(
        "--refine",
        type=positive_int,
        help="ivfpq/binary/int8: re-score the top REFINE·k candidates with the exact vectors, fixed "
        "instead of tuned.",
    )
    b.add_argument(
        "--binary-index",
        choices=BINARY_INDEXES,
        default=d.binary_index,
        help="binary: scan every code (flat) or walk an HNSW graph over them (hnsw: --hnsw-m, "
        f"--ef-construction, --ef-search apply) (default {d.binary_index}).",
    )
    b.add_argument(
        "--hnsw-m", type=positive_int, default=d.hnsw_m, help=f"hnsw: links per node (default {d.hnsw_m})."
    )
    b.add_argument(
        "--ef-construction",
        type=positive_int,
        default=d.ef_construction,
        help="hnsw: build beam width (default %(default)s; larger builds longer and searches faster at the same recall: docs/performance.md).",
    )
    b.add_argument(
        "--ef-search",
        type=positive_int,
        help="hnsw, binary hnsw: search beam width, fixed instead of tuned (without a target: 128).",
    )
    b.add_argument(
        "--hnsw-storage",
        choices=HNSW_STORAGES,
        default=d.hnsw_storage,
        help=f"hnsw: vectors stored as float32 (flat) or 8-bit scalar-quantised (sq8; default {d.hnsw_storage}).",
    )
    b.add_argument("--pq-m", type=positive_int, help="ivfpq: sub-vectors (bytes a vector; default D/8).")
    b.add_argument(
        "--train-size",
        type=positive_int,
        help="ivf/ivfpq, hnsw sq8, int8: rows sampled to train (default 40·nlist; sq8 and int8 65,536).",
    )
    b.add_argument("--seed", type=whole_number, default=0, help="Seed of the training sample.")
    b.add_argument("--overwrite", action="store_true", help="Replace an earlier index at --output.")
    declare_build_rules(b)
    i = isub.add_parser(
        "info", help="Print an index folder's search setting, measured recall and QPS, then index.json."
    )
    i.add_argument("folder", type=read_index_location, help="An index folder, or a store (folder or s3://).")
    i.set_defaults(func=handle_info)


def declare_build_rules(b: argparse.ArgumentParser) -> None:
    """``index build``'s handler, and its options that contradict each other (``sentcl.cli.option_rules``)."""
    b.set_defaults(func=handle_build)
    faiss_only = (
        "--output",
        "--queries",
        "--refine",
        "--pq-m",
        "--binary-index",
        "--hnsw-storage",
        "--train-size",
    )
    store_builds = (
        "a store is built with --type ivf or hnsw, --nlist, --nprobe, --target-recall and the graph's --hnsw-m, "
        "--ef-construction and --ef-search"
    )
    declare_rules(
        b,
        *(excludes(option, "--store", store_builds) for option in faiss_only),
        needs("--pq-m", "--type", "ivfpq", why="sub-vectors are product quantisation's"),
        needs("--refine", "--type", "ivfpq", "binary", "int8", why="only these re-score candidates"),
        needs("--ef-search", "--type", "hnsw", "binary", why="the beam of an HNSW graph"),
        needs("--binary-index", "--type", "binary", why="how binary codes are searched"),
    )


def add_store_option(b: argparse.ArgumentParser) -> None:
    """``--store URI``: a vector store instead of a faiss folder."""
    b.add_argument(
        "--store",
        type=own_index_location,
        metavar="URI",
        help="Write a new version of a vector store (LanceDB: the vectors with their texts) instead of a faiss "
        "folder: a local folder, or s3://bucket/prefix (endpoint and keys from the AWS_* variables). Readers keep "
        "the version they opened until they reload. --type ivf (IVF_FLAT; --nlist, --nprobe) or hnsw "
        "(IVF_HNSW_SQ: a graph of 8-bit vectors; --hnsw-m, --ef-construction, --ef-search); --output and the "
        "other faiss options do not apply.",
    )


@declare("probability")
def recall_target(text: str) -> float | None:
    """--target-recall: a number in (0, 1], or 0 for no tuning."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1] or 0, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1] or 0, got {text!r}")
    return value or None


def handle_store_build(args: argparse.Namespace) -> int:
    """``--store URI``: the shards as a new published version of the store."""
    from sentcl.index.store_build import build_store

    check_input_dir(args.embeddings, "--embeddings")
    from sentcl.index.faiss_params import IndexParams

    graph = IndexParams(hnsw_m=args.hnsw_m, ef_construction=args.ef_construction, ef_search=args.ef_search)
    store = build_store(
        args.embeddings,
        args.store,
        args.target_recall,
        args.nlist,
        args.nprobe,
        seed=args.seed,
        kind=args.type,
        graph=graph,
    )
    meta = store.meta
    print(
        f"built store version {store.version} of {meta['count']} x {meta['dim']} vectors in "
        f"{meta['build_seconds']}s: {args.store}"
    )
    if "tuning" in meta:
        print(tuning_line(meta["tuning"]))
    return 0


def handle_build(args: argparse.Namespace) -> int:
    if args.store is not None:
        return handle_store_build(args)
    from sentcl.files.output import claim_folder
    from sentcl.index.faiss_build import build_from_shards, index_inputs
    from sentcl.index.faiss_params import IndexParams

    params = settings_from_args(IndexParams, args)  # --nlist, --nprobe, --hnsw-m, ..., --target-recall
    check_input_dir(args.embeddings, "--embeddings")
    output = args.output or args.embeddings / f"index-{args.type}"
    inputs = index_inputs(args.embeddings, args.queries)
    claim_folder(
        output, "index", "--output", inputs, replace=True, overwrite=args.overwrite
    )  # before the build
    check_output_dir(output, "--output", whole=True)
    build_from_shards(
        args.embeddings,
        output,
        args.type,
        params,
        seed=args.seed,
        queries=args.queries,
        overwrite=args.overwrite,
    )
    from sentcl.index.format import read_meta

    meta = read_meta(output)[1]
    print(
        f"built {args.type} index of {meta['count']} x {meta['dim']} vectors in {meta['build_seconds']}s: {output}"
    )
    if "tuning" in meta:
        print(tuning_line(meta["tuning"]))
    return 0


def tuning_line(t: dict) -> str:
    setting = ", ".join(f"{k} {v}" for k, v in t["setting"].items())
    verdict = "reached" if t["reached"] else "NOT reached (best setting kept)"
    if t.get("tuned_to", t["target_recall"]) != t["target_recall"]:
        verdict += f"; tuned to {t['tuned_to']} on held-out corpus rows"
    return (
        f"search setting {setting}: recall@10 {t['recall_at_10']:.4f} (target {t['target_recall']} {verdict}), "
        f"{t['qps']:.0f} queries/s batched, {t['qps_one_query']:.0f} one at a time; on {t['queries']}"
    )


def handle_info(args: argparse.Namespace) -> int:
    """index.json plus ``search`` (the setting in use, the measured recall and QPS) as JSON on stdout; the
    same in one readable line on stderr. Any index folder of the family (``sentcl.index.open_index``)."""
    import sys

    from sentcl.index import open_index

    where = args.folder if "://" in str(args.folder) else check_input_dir(args.folder, "index folder")
    index = open_index(where)
    summary = index.summary()
    if "tuning" in index.meta:
        print(tuning_line(index.meta["tuning"]), file=sys.stderr)
    elif summary["type"] not in ("flat", "exact"):
        setting = ", ".join(f"{k} {v}" for k, v in summary["setting"].items())
        print(f"search setting {setting} (not tuned: no recall measured)", file=sys.stderr)
    print(json.dumps({**index.meta, "search": summary}, indent=2))
    return 0
