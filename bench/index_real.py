"""``python -m bench.index --real``: ANN indexes on real sentence embeddings, each at its tuned setting.

Corpus: every distinct sentence available offline (``bench/index_corpus.py``: wiki prefix, SNLI, the
SentEval transfer tasks, SICK, STS; about 200k), encoded with all-MiniLM-L6-v2 by the sharded encode
(``sentcl.index.shards.encode_shards``, normalised, cached and resumable under ``--cache``). Queries: the
distinct STS-B test sentences (not in the corpus), encoded once and cached.

At each of three corpus sizes (the first N/4, N/2 and N rows), for each type:

1. build with ``sentcl index build``'s code and defaults (``IndexParams()``; hnsw is grown by adding rows,
   which gives the graph a build on the prefix gives);
2. tune its search setting as ``sentcl index build`` does (``sentcl.index.tuning``: 1,000 held-out corpus
   rows, target recall@10 0.95);
3. measure on the STS-B queries at that setting: recall@10 against exact search (faiss ``IndexFlatIP``),
   QPS with all queries in one batch (median of ``--rounds``) and one query at a time (``--one-query``
   queries), beside exact search's QPS measured the same way.

One faiss thread (``--threads``) for every side.

    python -m bench.index --real --threads 1      # from the repository root; bench/results/index_real.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import harness
from bench.common import format_table, median, write_json
from bench.index_corpus import build as build_corpus
from sentcl.defaults import DATA_DIR_DEFAULT, DATA_ENV

TYPES = ("ivf", "hnsw", "ivfpq")


class Prefix:
    """The first rows of the corpus standing in for a ShardSet (``gather``) for ivfpq's refine step."""

    def __init__(self, base: np.ndarray) -> None:
        self.base = base

    def gather(self, rows: np.ndarray) -> np.ndarray:
        return self.base[np.asarray(rows, dtype=np.int64)]  # (n, D)


def encoded(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    """(corpus (N, D), queries (Q, D)) unit rows; encoded once into ``args.cache`` (resumable)."""
    from sentcl.index.shards import ShardSet, encode_shards, read_manifest
    from sentcl.modeling.dual import load_encoder

    corpus, queries, n, q = build_corpus(Path(args.data_dir), Path(args.cache))
    print(f"corpus {n} sentences, {q} queries", file=sys.stderr)
    shards_dir = Path(args.cache) / "shards"
    model = None
    done = (shards_dir / "manifest.json").is_file() and read_manifest(shards_dir)["complete"]
    if not done and not args.finished_only:
        model = load_encoder(args.model)
        encode_shards(model, corpus, shards_dir, 10_000, model_name=args.model, normalize=True)
    qfile = Path(args.cache) / "queries.npy"
    if not qfile.is_file():
        model = model or load_encoder(args.model)
        texts = queries.read_text(encoding="utf-8").splitlines()
        np.save(qfile, np.asarray(model.encode(texts, batch_size=128, normalize=True), dtype=np.float32))
    manifest = read_manifest(shards_dir)
    if args.finished_only:  # the contiguous finished shards from line 1 of an encode still running
        recs = sorted(manifest["shards"], key=lambda r: r["start_line"])
        keep = [r for i, r in enumerate(recs) if r["start_line"] == 1 + sum(x["rows"] for x in recs[:i])]
        manifest = {**manifest, "shards": keep, "rows": sum(r["rows"] for r in keep), "complete": True}
    shards = ShardSet(shards_dir, manifest)
    base = np.concatenate([np.asarray(a) for _, a in shards.iter_arrays()])  # (N, D)
    return base, np.load(qfile)


def timed(search: Any, queries: np.ndarray, rounds: int, one: int) -> tuple[float, float]:
    """(batched QPS (median of rounds), one-query-at-a-time QPS over the first ``one`` queries)."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        search(queries)
        times.append(time.perf_counter() - start)
    start = time.perf_counter()
    for row in queries[:one]:
        search(row[None, :])
    return len(queries) / median(times), min(one, len(queries)) / (time.perf_counter() - start)


def held_out_probe(flat: Any, base: np.ndarray, n: int, seed: int) -> Any:
    """1,000 of the first n corpus rows as tuning queries, their exact top-10 without themselves."""
    from sentcl.index import tuning

    rows = np.sort(np.random.default_rng([seed, 21]).choice(n, size=min(1000, n), replace=False))
    _, ids = flat.search(base[rows], tuning.K + 1)  # (R, K + 1)
    exact = np.stack([row[row != own][: tuning.K] for row, own in zip(ids, rows, strict=True)])
    return tuning.Probe(base[rows], rows, exact, f"{len(rows)} held-out corpus rows")


def one_size(kind: str, index: Any, base: np.ndarray, n: int, ctx: dict[str, Any]) -> dict[str, Any]:
    """Tune ``index`` (over base[:n]) on held-out rows, then measure it on the STS-B queries."""
    from sentcl.index import tuning
    from sentcl.index.faiss_index import AnnIndex

    ann = AnnIndex(Path("."), index, {"type": kind, "dim": base.shape[1]})
    ann._shards = Prefix(base[:n])  # type: ignore[assignment]
    t = tuning.tune(ann, kind, ctx["params"], ctx["probe"], ctx["target"], {})
    test_probe = tuning.Probe(ctx["queries"], None, ctx["exact_ids"], "STS-B test")
    for r in t["sweep"]:  # each tried setting's recall on the STS-B queries beside the held-out one
        setting = {k: r[k] for k in ("nprobe", "ef_search", "refine") if k in r}
        r["sts_b_recall_at_10"] = tuning.measure(ann, test_probe, setting)["recall_at_10"]
    ann.configure(**t["setting"])
    _, ids = ann.search(ctx["queries"], tuning.K)
    qps, qps_one = timed(lambda q: ann.search(q, tuning.K), ctx["queries"], ctx["rounds"], ctx["one"])
    return {
        "type": kind,
        "n": n,
        "params": ctx["params"],
        "setting": t["setting"],
        "tune_recall_at_10": t["recall_at_10"],
        "sweep": t["sweep"],
        "recall_at_10": round(tuning.recall(ids, ctx["exact_ids"]), 4),
        "qps": qps,
        "qps_one_query": qps_one,
        "x_exact_batched": qps / ctx["exact_qps"],
        "x_exact_one_query": qps_one / ctx["exact_qps_one"],
        "build_s": ctx["build_s"],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    import faiss

    from sentcl.index.faiss_index import IndexParams, train_and_fill

    faiss.omp_set_num_threads(args.threads)
    base, queries = encoded(args)
    total = len(base) if args.n is None else min(args.n, len(base))
    sizes = [total // 4, total // 2, total]
    rows: list[dict[str, Any]] = []
    params = IndexParams(**{k: v for k, v in (("hnsw_m", args.hnsw_m), ("nlist", args.nlist)) if v})
    hnsw, hnsw_n, hnsw_s = None, 0, 0.0
    for n in sizes:
        flat = faiss.IndexFlatIP(base.shape[1])
        flat.add(base[:n])
        _, exact_ids = flat.search(queries, 10)  # (Q, 10)
        exact_qps, exact_one = timed(
            lambda q, flat=flat: flat.search(q, 10), queries, args.rounds, args.one_query
        )
        rows.append(
            {"type": "flat", "n": n, "qps": exact_qps, "qps_one_query": exact_one, "recall_at_10": 1.0}
        )
        ctx = {"queries": queries, "exact_ids": exact_ids, "exact_qps": exact_qps, "exact_qps_one": exact_one}
        ctx.update(rounds=args.rounds, one=args.one_query, target=args.target_recall)
        ctx["probe"] = held_out_probe(flat, base, n, args.seed)
        for kind in args.types.split(","):
            resolved = params.resolved(kind, base.shape[1], n)
            start = time.perf_counter()
            if kind == "hnsw":  # grown: the rows hnsw_n..n added to the graph of the previous size
                hnsw = hnsw or train_and_fill(kind, base.shape[1], 0, None, lambda: iter(()), resolved)
                hnsw.add(base[hnsw_n:n])
                hnsw_n, hnsw_s = n, hnsw_s + time.perf_counter() - start
                index, build_s = hnsw, hnsw_s
            else:
                pick = np.random.default_rng(args.seed)
                index = train_and_fill(
                    kind,
                    base.shape[1],
                    n,
                    lambda k, n=n, pick=pick: base[np.sort(pick.choice(n, size=k, replace=False))],
                    lambda n=n: (base[i : min(i + 100_000, n)] for i in range(0, n, 100_000)),
                    resolved,
                )
                build_s = time.perf_counter() - start
            ctx.update(params=resolved, build_s=build_s)
            rows.append(one_size(kind, index, base, n, ctx))
            r = rows[-1]
            print(
                f"n={n} {kind} {r['setting']} recall {r['recall_at_10']:.4f} "
                f"x{r['x_exact_batched']:.1f} / x{r['x_exact_one_query']:.1f} build {build_s:.0f}s",
                file=sys.stderr,
            )
    return {"n": total, "queries": len(queries), "sizes": sizes, "rows": rows}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--real", action="store_true", help="(the switch bench.index passes on)")
    p.add_argument("--model", default="all-MiniLM-L6-v2")
    p.add_argument("--data-dir", default=os.environ.get(DATA_ENV, str(Path(*DATA_DIR_DEFAULT))))
    p.add_argument("--cache", default="runs/bench-real", help="Corpus, shards and query embeddings.")
    p.add_argument("--n", type=int, help="Use only the first N corpus rows (default: all).")
    p.add_argument("--types", default=",".join(TYPES))
    p.add_argument("--hnsw-m", type=int, help="HNSW links per node (default: sentcl index build's).")
    p.add_argument(
        "--nlist", type=int, help="IVF cells at every size (default: sentcl index build's formula)."
    )
    p.add_argument(
        "--finished-only",
        action="store_true",
        help="Use the shards finished so far (from line 1) and encode nothing more.",
    )
    p.add_argument("--target-recall", type=float, default=0.95)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--one-query", type=int, default=200, help="Queries timed one at a time.")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", default="bench/results/index_real.json")
    args = p.parse_args(argv)
    head = harness.header("index_real", args, args.threads, argv=argv)
    result = run(args)
    headers = [
        "N",
        "type",
        "setting",
        "recall@10",
        "QPS batched",
        "× exact",
        "QPS one query",
        "× exact",
        "build s",
    ]
    table = []
    for r in result["rows"]:
        flat = r["type"] == "flat"
        setting = "exact" if flat else ", ".join(f"{k} {v}" for k, v in r["setting"].items())
        table.append(
            [
                r["n"],
                r["type"],
                setting,
                r["recall_at_10"],
                r["qps"],
                1.0 if flat else r["x_exact_batched"],
                r["qps_one_query"],
                1.0 if flat else r["x_exact_one_query"],
                0.0 if flat else r["build_s"],
            ]
        )
    print(format_table(headers, table))
    payload = {**head, **result}
    write_json(args.output, payload)
    return payload


if __name__ == "__main__":
    main()
