"""ANN indexes on 1,000,000 generated vectors: build time, memory, queries per second, recall@10 vs exact.

Data: a mixture in D = 384 (MiniLM's width) that mimics what sentence embeddings look like at the scale
that matters for an index: ``clusters`` topic centres on the unit sphere; inside each cluster the points
vary along a cluster-specific ``latent``-dimensional subspace (low intrinsic dimension, as real
embeddings have), plus small isotropic noise; every row is L2-normalised. Queries are fresh draws from the
same mixture (not rows of the base). It is not a real corpus: no near-duplicates, no hubness, no
anisotropic global direction, so treat the numbers as indicative of the index types, not of one corpus.

Each type is built with ``sentcl.index.faiss_build`` (the code ``sentcl index build`` runs: sample, train,
add chunk by chunk). Memory = the index serialised size (what it takes in RAM or mapped from disk) and the
process's RSS growth while building. QPS: ``rounds`` rounds, each searching all queries with every index
in a rotating order (the machine is shared); the median per type. Recall@10 = |ANN top-10 ∩ exact top-10|
/ 10, averaged over queries; exact = ``flat``. Each IVF/HNSW search setting (nprobe, efSearch) in the
sweep is one row.

    python -m bench.index --n 1000000 --threads 1         # from the repository root
    python -m bench.index --real                          # real embeddings: bench/index_real.py
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
from bench.common import PeakRSS, format_table, median, write_json

DEFAULT_SWEEP = {"ivf": [2, 4, 8, 16, 32], "ivfpq": [8, 32], "hnsw": [16, 32, 48, 64, 96, 128], "flat": [0]}


def mixture(
    n: int,
    dim: int,
    clusters: int,
    latent: int,
    seed: int,
    spread: float = 0.45,
    draw_seed: int = 1,
    chunk: int = 100_000,
) -> np.ndarray:
    """n unit rows of the cluster + subspace + noise mixture (module doc): (n, dim) float32."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)  # (C, D)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    bases = rng.standard_normal((clusters, latent, dim)).astype(np.float32) * (
        spread / np.sqrt(dim)
    )  # (C, L, D)
    out = np.empty((n, dim), dtype=np.float32)
    data_rng = np.random.default_rng([seed, draw_seed])  # same centres, own draws
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        c = data_rng.integers(0, clusters, size=m)  # (m,)
        z = data_rng.standard_normal((m, 1, latent)).astype(np.float32)  # (m, 1, L)
        x = (
            centres[c]
            + (z @ bases[c])[:, 0]
            + data_rng.standard_normal((m, dim)).astype(np.float32) * (0.1 / np.sqrt(dim))
        )  # (m, D)
        out[start : start + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def _with_setting(index: Any, kind: str, value: int) -> None:
    if kind in ("ivf", "ivfpq"):
        index.nprobe = value
    elif kind == "hnsw":
        index.hnsw.efSearch = value


def main(argv: list[str] | None = None) -> dict[str, Any]:
    if "--real" in (sys.argv[1:] if argv is None else argv):  # real sentence embeddings: bench/index_real.py
        from bench.index_real import main as real_main

        return real_main(argv)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--clusters", type=int, default=5000)
    p.add_argument("--latent", type=int, default=8)
    p.add_argument("--spread", type=float, default=0.45, help="Scale of the within-cluster subspace.")
    p.add_argument("--types", default="flat,ivf,hnsw,ivfpq")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=1, help="faiss (OpenMP) threads while searching.")
    p.add_argument("--build-threads", type=int, help="faiss threads while building (default: --threads).")
    p.add_argument(
        "--nlist", type=int, help="IVF cells (default: sentcl index build's, round(4·√N) capped at N // 39)."
    )
    p.add_argument("--hnsw-m", type=int, default=32)
    p.add_argument("--ef-construction", type=int, default=40)
    p.add_argument("--hnsw-storage", choices=("flat", "sq8"), default="flat")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", default="bench/results/index.json")
    args = p.parse_args(argv)

    import faiss

    from sentcl.index.faiss_build import train_and_fill
    from sentcl.index.faiss_params import IndexParams

    build_threads = args.build_threads or args.threads
    faiss.omp_set_num_threads(build_threads)
    head = harness.header("index", args, args.threads, argv=argv)  # load average at the start
    types = [t for t in args.types.split(",") if t]
    t0 = time.perf_counter()
    base = mixture(args.n, args.dim, args.clusters, args.latent, args.seed, args.spread)
    queries = mixture(args.queries, args.dim, args.clusters, args.latent, args.seed, args.spread, draw_seed=2)
    print(f"generated {args.n} x {args.dim} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    params = IndexParams(
        nlist=args.nlist,
        hnsw_m=args.hnsw_m,
        ef_construction=args.ef_construction,
        hnsw_storage=args.hnsw_storage,
    )
    rng = np.random.default_rng(args.seed)
    built: dict[str, dict[str, Any]] = {}
    for kind in ["flat"] + [t for t in types if t != "flat"]:
        resolved = params.resolved(kind, args.dim, args.n)
        with PeakRSS() as mem:
            start = time.perf_counter()
            index = train_and_fill(
                kind,
                args.dim,
                args.n,
                lambda k: base[np.sort(rng.choice(args.n, size=k, replace=False))],
                lambda: (base[i : i + 100_000] for i in range(0, args.n, 100_000)),
                resolved,
            )
            build_s = time.perf_counter() - start
        with tempfile.TemporaryDirectory() as tmp:
            faiss.write_index(index, f"{tmp}/i")
            size_mb = Path(f"{tmp}/i").stat().st_size / 2**20
        built[kind] = {
            "index": index,
            "build_s": build_s,
            "size_mb": size_mb,
            "rss_growth_mb": mem.peak - mem.start,
        }
        built[kind]["params"] = resolved
        print(f"built {kind} in {build_s:.1f}s ({size_mb:.0f} MiB)", file=sys.stderr)

    faiss.omp_set_num_threads(args.threads)  # both sides search with the same thread count
    exact_scores, exact_ids = built["flat"]["index"].search(queries, 10)  # (Q, 10)
    settings = [(k, v) for k in built for v in DEFAULT_SWEEP.get(k, [0])]
    timings: dict[str, list[float]] = {f"{k}:{v}": [] for k, v in settings}
    results: dict[str, np.ndarray] = {}
    for r in range(args.rounds):
        order = settings[r % len(settings) :] + settings[: r % len(settings)]
        for kind, value in order:
            index = built[kind]["index"]
            _with_setting(index, kind, value)
            start = time.perf_counter()
            _, ids = index.search(queries, 10)
            timings[f"{kind}:{value}"].append(time.perf_counter() - start)
            results[f"{kind}:{value}"] = ids
    rows, table = [], []
    exact_qps = args.queries / median(timings["flat:0"])
    for kind, value in settings:
        key = f"{kind}:{value}"
        ids = results[key]
        recall = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, exact_ids, strict=True)]))
        qps = args.queries / median(timings[key])
        b = built[kind]
        setting = {"ivf": "nprobe", "ivfpq": "nprobe", "hnsw": "efSearch"}.get(kind)
        row = {
            "type": kind,
            "setting": f"{setting}={value}" if setting else "exact",
            "build_s": b["build_s"],
            "size_mb": b["size_mb"],
            "rss_growth_mb": b["rss_growth_mb"],
            "qps": qps,
            "speedup_vs_exact": qps / exact_qps,
            "recall_at_10": recall,
            "params": b["params"],
            "search_s": timings[key],
        }
        rows.append(row)
        table.append(
            [
                kind,
                row["setting"],
                b["build_s"],
                b["size_mb"],
                b["rss_growth_mb"],
                qps,
                qps / exact_qps,
                recall,
            ]
        )
    headers = [
        "type",
        "search setting",
        "build s",
        "index MiB",
        "build RSS +MiB",
        "QPS",
        "× exact",
        "recall@10",
    ]
    print(format_table(headers, table))
    payload = {
        **head,
        "n": args.n,
        "dim": args.dim,
        "queries": args.queries,
        "clusters": args.clusters,
        "latent": args.latent,
        "faiss": faiss.__version__,
        "search_threads": args.threads,
        "build_threads": build_threads,
        "rows": rows,
    }
    write_json(args.output, payload)
    return payload


if __name__ == "__main__":
    main()
