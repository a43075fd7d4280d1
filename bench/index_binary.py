"""``python -m bench.index_binary``: binary and int8 search with float rescoring on the real offline sentences.

Corpus and queries are ``bench/index_real.py``'s: every distinct sentence available offline (203,364),
encoded with all-MiniLM-L6-v2 into shards (cached and resumable under ``--cache``), and the 2,551 distinct
STS-B test sentences as queries (not in the corpus).

Each point (``--points``: ``binary`` flat, ``binary-hnsw``, ``int8``) is built and tuned with ``sentcl index
build``'s code and defaults (target recall@10 0.95 on 1,000 corpus rows held out while tuning), opened as
``sentcl search`` opens it, and measured on the STS-B queries:

* recall@10 against exact search (faiss ``IndexFlatIP`` over the same unit vectors);
* memory: the opened index's own bytes (codes, graph links, the id -> row table; ``AnnIndex.memory_bytes``)
  against the float index's (N · D · 4 bytes); the float vectors a query re-scores (k · r rows) are read
  from the memory-mapped shards and are counted apart, as bytes read a query;
* queries per second, all queries in one batch (median of ``--rounds``) and one query at a time (the first
  ``--one-query``); exact search's one-query QPS is measured right before and after each point and the
  point is compared with their mean (the machine is shared: its load moves between measurements).

One faiss thread (``--threads``). ``point(...)`` is the function another bench calls for one search point.

    python -m bench.index_binary --threads 1     # bench/results/index_binary.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import harness
from bench.common import format_table, write_json
from bench.index_real import encoded, prefix, timed

POINTS = {"binary": ("binary", {}), "binary-hnsw": ("binary", {"binary_index": "hnsw"}), "int8": ("int8", {})}
K = 10


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    """Mean |found ∩ exact| / k over the queries."""
    return float(np.mean([len(set(a) & set(b)) / exact.shape[1] for a, b in zip(found, exact, strict=True)]))


def point(
    shards: Any,
    name: str,
    queries: np.ndarray,
    exact_ids: np.ndarray,
    out: Path,
    *,
    target: float = 0.95,
    seed: int = 0,
    rounds: int = 3,
    one: int = 200,
) -> dict[str, Any]:
    """One search point: build ``name`` (a key of ``POINTS``) over ``shards`` into ``out`` with ``sentcl
    index build``'s code, open it as search does, measure recall@10, memory and QPS on ``queries`` (Q, D)."""
    from sentcl.index import open_index
    from sentcl.index.faiss_build import build_from_shards
    from sentcl.index.faiss_params import IndexParams

    kind, extra = POINTS[name]
    start = time.perf_counter()
    build_from_shards(shards, out, kind, IndexParams(target_recall=target, **extra), seed=seed)
    build_s = time.perf_counter() - start
    ann = open_index(out)
    ann._shards = shards  # the rescoring reads these rows (the encode may still be running)
    _, ids = ann.search(queries, K)
    qps, qps_one = timed(lambda q: ann.search(q, K), queries, rounds, one)
    t = ann.meta["tuning"]
    candidates = min(K * ann.refine, len(ann))
    return {
        "type": name,
        "n": len(ann),
        "params": ann.meta["params"],
        "setting": t["setting"],
        "tune_recall_at_10": t["recall_at_10"],
        "tuned_to": t["tuned_to"],
        "recall_at_10": round(recall(ids, exact_ids), 4),
        "qps": qps,
        "qps_one_query": qps_one,
        "memory_bytes": ann.memory_bytes(),
        "float_memory_bytes": len(ann) * ann.dim * 4,
        "memory_fraction": ann.memory_bytes() / (len(ann) * ann.dim * 4),
        "float_bytes_read_a_query": candidates * ann.dim * 4,
        "build_and_tune_s": round(build_s, 1),
        "sweep": t["sweep"],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    import faiss

    from sentcl.similarity import unit_rows

    faiss.omp_set_num_threads(args.threads)
    shards, queries = encoded(args)
    count = len(shards.manifest["shards"])
    if args.n:
        count = min(count, max(1, args.n // shards.manifest["shard_size"]))
    part = prefix(shards, count)
    base = unit_rows(
        np.concatenate([np.asarray(a, dtype=np.float32) for _, a in part.iter_arrays()])
    )  # (N, D): exact = cosine
    flat = faiss.IndexFlatIP(base.shape[1])
    flat.add(base)
    del base
    _, exact_ids = flat.search(queries, K)  # (Q, K)

    def exact_timed() -> tuple[float, float]:
        return timed(lambda q: flat.search(q, K), queries, args.rounds, args.one_query)

    qps, qps_one = exact_timed()
    rows: list[dict[str, Any]] = [
        {"type": "flat", "n": part.rows, "qps": qps, "qps_one_query": qps_one, "recall_at_10": 1.0}
    ]
    rows[0].update(memory_bytes=part.rows * part.dim * 4, memory_fraction=1.0)
    for name in args.points.split(","):
        with tempfile.TemporaryDirectory(dir=args.cache) as tmp:
            row = point(part, name, queries, exact_ids, Path(tmp) / name, target=args.target_recall,
                        seed=args.seed, rounds=args.rounds, one=args.one_query)  # fmt: skip
        after = exact_timed()
        before, qps = (qps, qps_one), after
        row["exact_qps_one_query_around"] = [before[1], after[1]]
        row["x_exact_one_query"] = row["qps_one_query"] / ((before[1] + after[1]) / 2)
        row["x_exact_batched"] = row["qps"] / ((before[0] + after[0]) / 2)
        qps, qps_one = after
        rows.append(row)
        print(
            f"{name} {row['setting']} recall {row['recall_at_10']:.4f} memory 1/{1 / row['memory_fraction']:.1f} "
            f"x{row['x_exact_one_query']:.1f} exact one query",
            file=sys.stderr,
        )
    return {"n": part.rows, "queries": len(queries), "rows": rows}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = harness.index_parser(
        __doc__,
        "index_binary",
        "A finished shard folder of the same model's vectors (bench/index_real.py).",
        "The shards finished so far; encode nothing.",
    )
    p.add_argument("--points", default=",".join(POINTS))
    args = p.parse_args(argv)
    head = harness.header("index_binary", args, args.threads, argv=argv)
    result = run(args)
    headers = ["N", "type", "setting", "recall@10", "memory", "QPS one query", "× exact", "QPS batched"]
    table = [
        [
            r["n"],
            r["type"],
            ", ".join(f"{k} {v}" for k, v in r.get("setting", {}).items()) or "exact",
            r["recall_at_10"],
            f"1/{1 / r['memory_fraction']:.1f}",
            r["qps_one_query"],
            r.get("x_exact_one_query", 1.0),
            r["qps"],
        ]
        for r in result["rows"]
    ]
    print(format_table(headers, table))
    payload = {**head, **result}
    write_json(args.output, payload)
    return payload


if __name__ == "__main__":
    main()
