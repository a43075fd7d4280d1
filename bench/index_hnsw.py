"""HNSW settings against exact search at one N: storage (flat / sq8) × M, efSearch swept, 1 and 2 threads.

The companion of ``bench/index.py`` for choosing ``sentcl index build --type hnsw``'s defaults: the same
generated mixture (``bench.index.mixture``), the same exact reference (``IndexFlatIP``, all queries in one
batched BLAS call) and the same recall@10. Each configuration ``STORAGE+M`` (e.g. ``sq8:32``,
``flat:32``) is built with ``sentcl.index.faiss_build.new_index`` (efConstruction = ``--ef-construction``)
using ``--build-threads`` faiss threads, adding 100,000 rows at a time; sq8 is trained on the first 50,000
rows (the mixture's rows are i.i.d., so that is a uniform sample). With ``--target-recall``, efSearch is then
tuned as ``sentcl index build`` tunes it (``sentcl.index.tuning``: the EF_LADDER tried cheapest first, the
first reaching the target kept) on a separate draw of ``--tune-queries`` queries (outside the index, so the
target itself), and added to the measured efSearch values. Then, for each search thread count, three
rounds alternate the exact search (before and after) with every efSearch; the median time is kept. Results
are written after each configuration, so a long run keeps what it finished.

    python -m bench.index_hnsw --n 1000000 --configs sq8:32,flat:32 --build-threads 2
    python -m bench.index_hnsw --configs flat:32 --ef-construction 200 --build-threads 1 --search-threads 1 \
        --target-recall 0.95 --output bench/results/index_hnsw_1m_tuned.json
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
from bench.common import median, write_json
from bench.index import mixture


def recall_at_10(ids: np.ndarray, exact: np.ndarray) -> float:
    return float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, exact, strict=True)]))


def tune_ef(index: Any, flat: Any, args: argparse.Namespace, dim: int) -> dict[str, Any]:
    """efSearch tuned to ``--target-recall`` on a fresh draw of tuning queries (``sentcl.index.tuning``'s
    ladder, cheapest first; the best one when none reaches the target), with the sweep."""
    from sentcl.index import tuning

    tune_q = mixture(args.tune_queries, dim, args.clusters, 8, 0, 0.45, draw_seed=3)
    _, exact = flat.search(tune_q, tuning.K)  # (T, 10)
    sweep = []
    for ef in tuning.EF_LADDER:
        index.hnsw.efSearch = ef
        start = time.perf_counter()
        _, ids = index.search(tune_q, tuning.K)  # (T, 10)
        qps = len(tune_q) / (time.perf_counter() - start)
        sweep.append({"ef_search": ef, "recall_at_10": round(tuning.recall(ids, exact), 4), "qps": qps})
        print(f"tuning efSearch={ef}: recall@10 {sweep[-1]['recall_at_10']}", file=sys.stderr, flush=True)
        if sweep[-1]["recall_at_10"] >= args.target_recall:
            break
    best = (
        sweep[-1]
        if sweep[-1]["recall_at_10"] >= args.target_recall
        else max(sweep, key=lambda r: r["recall_at_10"])
    )
    return {
        "target_recall": args.target_recall,
        "reached": best["recall_at_10"] >= args.target_recall,
        "ef_search": best["ef_search"],
        "recall_at_10": best["recall_at_10"],
        "queries": f"{len(tune_q)} fresh draws of the mixture (draw_seed 3), not the measured queries",
        "sweep": sweep,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--queries", type=int, default=500)
    p.add_argument("--clusters", type=int, default=5000)
    p.add_argument("--configs", default="sq8:32,flat:32", help="STORAGE:M,... (storage flat or sq8).")
    p.add_argument("--ef-construction", type=int, default=40)
    p.add_argument("--ef-search", default="16,32,48,64,96,128")
    p.add_argument("--build-threads", type=int, default=2)
    p.add_argument("--search-threads", default="1,2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--target-recall", type=float, help="Tune efSearch to this recall@10 (module doc).")
    p.add_argument("--tune-queries", type=int, default=1000, help="Tuning queries (a draw of their own).")
    p.add_argument("--output", default="bench/results/index_hnsw_1m.json")
    args = p.parse_args(argv)

    import faiss

    from sentcl.index.faiss_build import new_index

    efs = [int(v) for v in args.ef_search.split(",")]
    dim = 384
    payload: dict[str, Any] = {
        **harness.header("index_hnsw", args, args.build_threads, argv=argv),
        "n": args.n,
        "queries": args.queries,
        "clusters": args.clusters,
        "faiss": faiss.__version__,
        "rows": [],
    }
    base = mixture(args.n, dim, args.clusters, 8, 0, 0.45)
    queries = mixture(args.queries, dim, args.clusters, 8, 0, 0.45, draw_seed=2)
    faiss.omp_set_num_threads(1)
    flat = faiss.IndexFlatIP(dim)
    flat.add(base)
    _, exact_ids = flat.search(queries, 10)  # (Q, 10)
    for config in args.configs.split(","):
        storage, m = config.split(":")
        params = {"hnsw_m": int(m), "ef_construction": args.ef_construction, "ef_search": efs[0]}
        index = new_index("hnsw", dim, {**params, "hnsw_storage": storage})
        faiss.omp_set_num_threads(args.build_threads)
        start = time.perf_counter()
        if not index.is_trained:
            index.train(base[:50_000])
        for i in range(0, args.n, 100_000):
            index.add(base[i : i + 100_000])
            print(
                f"{config}: {min(i + 100_000, args.n)} added, {time.perf_counter() - start:.0f}s",
                file=sys.stderr,
                flush=True,
            )
        build_s = time.perf_counter() - start
        tuned = None
        if args.target_recall is not None:
            tuned = tune_ef(index, flat, args, dim)
            payload.setdefault("tuning", {})[config] = tuned
            efs_run = sorted({*efs, tuned["ef_search"]})
        else:
            efs_run = efs
        with tempfile.TemporaryDirectory() as tmp:
            faiss.write_index(index, f"{tmp}/i")
            size_mb = Path(f"{tmp}/i").stat().st_size / 2**20
        for threads in [int(t) for t in args.search_threads.split(",")]:
            faiss.omp_set_num_threads(threads)  # the exact and the HNSW search alike
            exact_s: list[float] = []
            times: dict[int, list[float]] = {ef: [] for ef in efs_run}
            ids: dict[int, np.ndarray] = {}
            for _ in range(args.rounds):
                for ef in [None, *efs_run, None]:
                    start = time.perf_counter()
                    if ef is None:
                        flat.search(queries, 10)
                        exact_s.append(time.perf_counter() - start)
                        continue
                    index.hnsw.efSearch = ef
                    _, ids[ef] = index.search(queries, 10)
                    times[ef].append(time.perf_counter() - start)
            exact_qps = args.queries / median(exact_s)
            for ef in efs_run:
                qps = args.queries / median(times[ef])
                row = {
                    "storage": storage,
                    "hnsw_m": int(m),
                    "ef_construction": args.ef_construction,
                    "ef_search": ef,
                    "build_threads": args.build_threads,
                    "build_s": build_s,
                    "size_mb": size_mb,
                    "search_threads": threads,
                    "qps": qps,
                    "exact_qps": exact_qps,
                    "speedup_vs_exact": qps / exact_qps,
                    "recall_at_10": recall_at_10(ids[ef], exact_ids),
                    "tuned": tuned is not None and ef == tuned["ef_search"],
                    "search_s": times[ef],
                    "exact_s": exact_s,
                }
                payload["rows"].append(row)
                print(
                    f"{config} threads={threads} efSearch={ef}: {qps:.0f} QPS, "
                    f"{row['speedup_vs_exact']:.1f}x exact, recall@10 {row['recall_at_10']:.3f}"
                )
        write_json(args.output, payload)
    return payload


if __name__ == "__main__":
    main()
