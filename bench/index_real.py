"""``python -m bench.index --real``: ANN indexes on real sentence embeddings, each at its tuned setting.

Corpus: every distinct sentence available offline (``bench/index_corpus.py``: wiki prefix, SNLI, the
SentEval transfer tasks, SICK, STS; about 200k), encoded with all-MiniLM-L6-v2 by the sharded encode
(``sentcl.data.shards.encode_shards``, normalised, cached and resumable under ``--cache``). Queries: the
distinct STS-B test sentences (not in the corpus), encoded once and cached.

At each of three corpus sizes (the first quarter, half and all of the shards; ``--sizes``), for each type:

1. build and tune it with ``sentcl index build``'s code and defaults (``build_from_shards``,
   ``IndexParams()``: 1,000 corpus rows held out while tuning, target recall@10 0.95), open it as
   ``sentcl search`` does (memory-mapped, at the stored setting);
2. measure on the STS-B queries at that setting: recall@10 against exact search (faiss ``IndexFlatIP``),
   QPS with all queries in one batch (median of ``--rounds``) and one query at a time (``--one-query``
   queries), beside exact search's QPS measured the same way.

With ``--embeddings DIR`` the corpus is a finished shard folder of real sentences already encoded with the same
model (any ``sentcl encode --shard-size`` output, e.g. a distillation teacher's cache) instead of the offline
corpus; the STS-B test queries are still encoded here.

With ``--user-queries N`` the build is tuned on a seeded sample of N STS-B queries instead, as a user's own queries
(``sentcl index build --queries FILE``: tuned to the target itself), and the other queries measure it.

One faiss thread (``--threads``) for every side.

    python -m bench.index --real --threads 1      # from the repository root; bench/results/index_real.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import harness
from bench.common import format_table, median, write_json
from bench.index_corpus import build as build_corpus
from bench.index_corpus import stsb_test_sentences

TYPES = ("ivf", "hnsw", "ivfpq")


def encoded(args: argparse.Namespace) -> tuple[Any, np.ndarray]:
    """(the corpus's ShardSet, queries (Q, D) unit rows); encoded once into ``args.cache`` (resumable)."""
    from sentcl.data.shards import ShardSet, encode_shards, read_manifest
    from sentcl.modeling.open import load_encoder

    Path(args.cache).mkdir(parents=True, exist_ok=True)
    if args.embeddings:
        shards_dir = Path(args.embeddings)
        queries = Path(args.cache) / "queries.txt"
        queries.write_text("\n".join(stsb_test_sentences(Path(args.data_dir))) + "\n", encoding="utf-8")
        given = read_manifest(shards_dir)["model"]  # a clear error for a folder that is no shard folder
        if given != args.model:
            raise SystemExit(f"--embeddings {shards_dir}: encoded with {given}, not {args.model}")
    else:
        corpus, queries, n, q = build_corpus(Path(args.data_dir), Path(args.cache))
        print(f"corpus {n} sentences, {q} queries", file=sys.stderr)
        shards_dir = Path(args.cache) / "shards"
    model = None
    done = (shards_dir / "manifest.json").is_file() and read_manifest(shards_dir)["complete"]
    if args.embeddings and not done:
        raise SystemExit(f"--embeddings {shards_dir}: not a finished shard folder")
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
    return ShardSet(shards_dir, manifest), np.load(qfile)


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


def prefix(shards: Any, n_shards: int) -> Any:
    """The first ``n_shards`` shards as a ShardSet of their own."""
    from sentcl.data.shards import ShardSet

    recs = shards.manifest["shards"][:n_shards]
    return ShardSet(shards.folder, {**shards.manifest, "shards": recs, "rows": sum(r["rows"] for r in recs)})


def one_type(kind: str, part: Any, out: Path, ctx: dict[str, Any]) -> dict[str, Any]:
    """Build + tune with ``sentcl index build``'s code, open it as search does, measure on the STS-B queries."""
    from sentcl.index import open_index, tuning
    from sentcl.index.faiss_build import build_from_shards
    from sentcl.index.faiss_params import IndexParams

    params = IndexParams(target_recall=ctx["target"], **ctx["overrides"])
    start = time.perf_counter()
    build_from_shards(part, out, kind, params, seed=ctx["seed"], queries=ctx["tune_file"])
    total_s = time.perf_counter() - start
    ann = open_index(out)
    ann._shards = part  # the refine step reads these rows (the encode may still be running)
    t = ann.meta["tuning"]
    test_probe = tuning.Probe(ctx["queries"], None, ctx["exact_ids"], "STS-B test", outside=True)
    for r in t["sweep"]:  # each tried setting's recall on the STS-B queries beside the held-out one
        r["sts_b_recall_at_10"] = tuning.measure(ann, test_probe, {k: r[k] for k in ann.setting() if k in r})[
            "recall_at_10"
        ]
    ann.configure(**t["setting"])
    _, ids = ann.search(ctx["queries"], tuning.K)
    qps, qps_one = timed(lambda q: ann.search(q, tuning.K), ctx["queries"], ctx["rounds"], ctx["one"])
    return {
        "type": kind,
        "n": part.rows,
        "params": ann.meta["params"],
        "setting": t["setting"],
        "tune_recall_at_10": t["recall_at_10"],
        "recall_at_10": round(tuning.recall(ids, ctx["exact_ids"]), 4),
        "qps": qps,
        "qps_one_query": qps_one,
        "x_exact_batched": qps / ctx["exact_qps"],
        "x_exact_one_query": qps_one / ctx["exact_qps_one"],
        "build_s": ann.meta["build_seconds"],
        "build_and_tune_s": total_s,
        "index_mb": (out / "index.faiss").stat().st_size / 2**20,
        "sweep": t["sweep"],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    import tempfile

    import faiss

    from sentcl.similarity import unit_rows

    faiss.omp_set_num_threads(args.threads)
    shards, queries = encoded(args)
    tune_file = None
    if args.user_queries:  # the first STS-B queries tune the build (--queries FILE), the others measure
        order = np.random.default_rng(args.seed).permutation(len(queries))  # STS-B is grouped by genre
        tune_file = Path(args.cache) / f"tune_queries_{args.user_queries}.npy"
        np.save(tune_file, queries[order[: args.user_queries]])
        queries = queries[np.sort(order[args.user_queries :])]
    count = len(shards.manifest["shards"])
    if args.n:
        count = min(count, max(1, args.n // shards.manifest["shard_size"]))
    rows: list[dict[str, Any]] = []
    overrides = {k: v for k, v in (("hnsw_m", args.hnsw_m), ("nlist", args.nlist)) if v}
    fractions = [float(f) for f in args.sizes.split(",")]
    for n_shards in sorted({max(1, round(count * f)) for f in fractions}):
        part = prefix(shards, n_shards)
        base = unit_rows(
            np.concatenate([np.asarray(a, dtype=np.float32) for _, a in part.iter_arrays()])
        )  # (n, D): exact = cosine
        flat = faiss.IndexFlatIP(base.shape[1])
        flat.add(base)
        _, exact_ids = flat.search(queries, 10)  # (Q, 10)
        exact_qps, exact_one = timed(lambda q, f=flat: f.search(q, 10), queries, args.rounds, args.one_query)
        n = part.rows
        rows.append(
            {"type": "flat", "n": n, "qps": exact_qps, "qps_one_query": exact_one, "recall_at_10": 1.0}
        )
        del flat, base
        ctx = {"queries": queries, "exact_ids": exact_ids, "exact_qps": exact_qps, "exact_qps_one": exact_one}
        ctx.update(rounds=args.rounds, one=args.one_query, target=args.target_recall, seed=args.seed)
        ctx["overrides"] = overrides
        ctx["tune_file"] = tune_file
        for kind in args.types.split(","):
            with tempfile.TemporaryDirectory(dir=args.cache) as tmp:
                rows.append(one_type(kind, part, Path(tmp) / kind, ctx))
            r = rows[-1]
            print(
                f"n={n} {kind} {r['setting']} recall {r['recall_at_10']:.4f} (tuning {r['tune_recall_at_10']}) "
                f"x{r['x_exact_batched']:.1f} / x{r['x_exact_one_query']:.1f} build {r['build_and_tune_s']:.0f}s",
                file=sys.stderr,
            )
    tuned_on = (
        f"{args.user_queries} STS-B test queries (seeded sample)" if tune_file else "held-out corpus rows"
    )
    return {"n": rows[-1]["n"], "queries": len(queries), "tuned_on": tuned_on, "rows": rows}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = harness.index_parser(
        __doc__,
        "index_real",
        "A finished shard folder of real sentences encoded with --model, used as the corpus instead of "
        "encoding the offline corpus (its query embeddings are cached under --cache).",
        "Use the shards finished so far (from line 1) and encode nothing more.",
    )
    p.add_argument("--real", action="store_true", help="(the switch bench.index passes on)")
    p.add_argument("--types", default=",".join(TYPES))
    p.add_argument("--hnsw-m", type=int, help="HNSW links per node (default: sentcl index build's).")
    p.add_argument(
        "--nlist", type=int, help="IVF cells at every size (default: sentcl index build's formula)."
    )
    p.add_argument(
        "--sizes",
        default="0.25,0.5,1",
        help="Corpus sizes as fractions of the shards (default a quarter, half, all).",
    )
    p.add_argument(
        "--user-queries",
        type=int,
        default=0,
        help="Tune on a seeded sample of N STS-B queries as a user's own queries (sentcl index build --queries FILE: "
        "tuned to the target itself) and measure on the others (default 0: held-out corpus rows).",
    )
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
