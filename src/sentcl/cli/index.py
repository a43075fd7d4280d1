"""``sentcl index build|info``: a faiss index over sharded embeddings (``sentcl encode --shard-size``)."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from sentcl.cli.options import positive_int, settings_from_args
from sentcl.pathcheck import check_input_dir, check_output_dir

logger = logging.getLogger("sentcl")


def add_parser(sub: argparse._SubParsersAction) -> None:
    from sentcl.index.faiss_index import HNSW_STORAGES, TYPES, IndexParams

    d = IndexParams()
    p = sub.add_parser("index", help="Build or inspect a faiss ANN index over sharded embeddings.")
    isub = p.add_subparsers(dest="index_command", required=True, metavar="ACTION")
    b = isub.add_parser("build", help="Train on a sample, add shard by shard, save atomically.")
    b.add_argument(
        "--embeddings", required=True, type=Path, help="Folder written by sentcl encode --shard-size."
    )
    b.add_argument(
        "--type", choices=TYPES, default="ivf", help="flat (exact), ivf, hnsw or ivfpq (default ivf)."
    )
    b.add_argument("--output", type=Path, help="Index folder (default: EMBEDDINGS/index-TYPE).")
    b.add_argument("--nlist", type=positive_int, help="ivf/ivfpq: k-means cells (default 4·√N).")
    b.add_argument(
        "--nprobe",
        type=positive_int,
        default=d.nprobe,
        help=f"ivf/ivfpq: cells searched (default {d.nprobe}).",
    )
    b.add_argument(
        "--hnsw-m", type=positive_int, default=d.hnsw_m, help=f"hnsw: links per node (default {d.hnsw_m})."
    )
    b.add_argument(
        "--ef-construction", type=positive_int, default=d.ef_construction, help="hnsw: build beam width."
    )
    b.add_argument("--ef-search", type=positive_int, default=d.ef_search, help="hnsw: search beam width.")
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
        help="ivf/ivfpq, hnsw sq8: rows sampled to train (default 40·nlist; sq8 65,536).",
    )
    b.add_argument("--seed", type=int, default=0, help="Seed of the training sample.")
    b.set_defaults(func=run_build)
    i = isub.add_parser("info", help="Print an index folder's metadata (faiss.json).")
    i.add_argument("folder", type=Path)
    i.set_defaults(func=run_info)


def run_build(args: argparse.Namespace) -> int:
    from sentcl.index.faiss_index import IndexParams, build_from_shards

    params = settings_from_args(IndexParams, args)  # --nlist, --nprobe, --hnsw-m, ..., --train-size
    check_input_dir(args.embeddings, "--embeddings")
    output = args.output or args.embeddings / f"index-{args.type}"
    check_output_dir(output, "--output", whole=True)  # before the build, not after it
    build_from_shards(args.embeddings, output, args.type, params, seed=args.seed)
    meta = json.loads((output / "faiss.json").read_text(encoding="utf-8"))
    print(
        f"built {args.type} index of {meta['count']} x {meta['dim']} vectors in {meta['build_seconds']}s: {output}"
    )
    return 0


def run_info(args: argparse.Namespace) -> int:
    from sentcl.index.faiss_index import open_index

    index = open_index(check_input_dir(args.folder, "index folder"))
    print(json.dumps(index.meta, indent=2))
    return 0
