"""Vector stores against sentcl's faiss HNSW: LanceDB (sentcl's store backend) and Milvus Lite, at the same recall.

Data: ``--source real`` the finished shards of ``bench/index_real.py``'s cache (all-MiniLM-L6-v2 embeddings of the
offline corpus, the first ``--n`` rows), queries the STS-B test sentences (encoded here once, cached beside); or
``--source synthetic`` ``--n`` vectors of ``bench/index.py``'s mixture, queries fresh draws of it.

Engines, each built in this process and timed:

* ``lancedb``: the table and IVF_FLAT index ``sentcl index build --store`` writes (round(√N) cells, inner
  product), searched through ``sentcl.index.store.StoreIndex`` (what ``search``/``serve``/``mine`` call);
  setting: nprobe;
* ``lancedb-hnsw``: the ``hnsw`` store (``--store --type hnsw``): IVF_HNSW_SQ, one graph of 8-bit vectors a
  cell of at most 1M rows, sentcl's faiss M and efConstruction, re-scored from the float vectors (refine 2);
  setting: efSearch;
* ``milvus-lite``: a Milvus Lite file (``MilvusClient(path)``: a local server process it starts), IVF_FLAT with
  round(√N) cells (Milvus Lite builds FLAT and IVF_FLAT only), inner product; setting: nprobe;
* ``faiss-hnsw``: ``sentcl.index.faiss_build.new_index("hnsw")`` at sentcl's defaults (M 32, efConstruction 80),
  flat storage; setting: efSearch.

For each engine the setting ladder is walked until recall@10 against exact search (numpy) reaches ``--target``;
faiss's efSearch is then the smallest whose recall is at least the store's. QPS at that setting: single queries
(``--one-query`` of them, one call each) and batches of 64 (all queries), alternating the engines round by round
(``--rounds``, median). Memory: the process's resident set before and after each engine is built and searched
(MB), and the engine's files on disk. One thread each (faiss ``omp_set_num_threads(1)``; Lance
``LANCE_CPU_THREADS=1``; Milvus Lite's server process is its own, not limited).

    python -m bench.store --source synthetic --n 200000 --output bench/results/store_synthetic_200k.json
    python -m bench.store --source real --n 50000 --output bench/results/store_real_50k.json
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

os.environ.setdefault("LANCE_CPU_THREADS", "1")
os.environ.setdefault("LANCE_LOG", "error")

import numpy as np  # noqa: E402

from bench.common import format_table, median, rss_mb, write_json  # noqa: E402
from bench.index import mixture  # noqa: E402

NPROBE_LADDER = (1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
EF_LADDER = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
BATCH = 64
K = 10


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    return float(np.mean([len(set(a[a >= 0]) & set(b)) / K for a, b in zip(found, exact, strict=True)]))


def exact_top(base: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Exact top-10 ids by inner product of unit rows, in blocks of queries: (Q, 10)."""
    out = []
    for i in range(0, len(queries), 256):
        s = queries[i : i + 256] @ base.T  # (q, N)
        top = np.argpartition(-s, K, axis=1)[:, :K]  # (q, K) unordered
        order = np.argsort(-np.take_along_axis(s, top, axis=1), axis=1)
        out.append(np.take_along_axis(top, order, axis=1))
    return np.concatenate(out)  # (Q, K)


def disk_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20, 1)


class Lance:
    name = "lancedb"

    def build(self, base: np.ndarray, where: Path) -> None:
        from lancedb.index import IvfFlat

        from sentcl.index.store import StoreIndex
        from sentcl.index.store_build import default_partitions

        table = self._table(base, where)
        n, d = base.shape
        self.nlist = default_partitions(n)
        table.create_index("vector", config=IvfFlat(distance_type="dot", num_partitions=self.nlist))
        meta = {"dim": d, "count": n, "params": {}, "build_id": "bench"}
        self.index = StoreIndex(str(where), table, meta)
        self.path = where

    @staticmethod
    def _table(base: np.ndarray, where: Path) -> Any:
        import lancedb
        import pyarrow as pa

        n, d = base.shape
        return lancedb.connect(str(where)).create_table(
            "vectors",
            pa.table(
                {
                    "id": pa.array(np.arange(n, dtype=np.int64)),
                    "vector": pa.FixedSizeListArray.from_arrays(pa.array(base.reshape(-1)), d),  # (N·D,)
                }
            ),
        )

    def ladder(self) -> list[int]:
        return [p for p in NPROBE_LADDER if p <= self.nlist]

    def set(self, value: int) -> None:
        self.index.configure(nprobe=value)

    def search(self, q: np.ndarray) -> np.ndarray:
        return self.index.search(q, K)[1]


class LanceHnsw(Lance):
    """The ``hnsw`` store (``sentcl index build --store --type hnsw``): IVF_HNSW_SQ, one graph a cell of at most
    1M rows (every cell searched), sentcl's faiss HNSW M and efConstruction, candidates re-scored from the float
    vectors (refine 2); setting: efSearch."""

    name = "lancedb-hnsw"

    def build(self, base: np.ndarray, where: Path) -> None:
        from lancedb.index import HnswSq

        from sentcl.index.faiss_params import IndexParams
        from sentcl.index.store import STORE_INDEXES, StoreIndex
        from sentcl.index.store_build import HNSW_REFINE, default_partitions

        table = self._table(base, where)
        n, d = base.shape
        self.nlist, graph = default_partitions(n, "hnsw"), IndexParams()
        table.create_index(
            "vector",
            config=HnswSq(
                distance_type="dot",
                num_partitions=self.nlist,
                m=graph.hnsw_m,
                ef_construction=graph.ef_construction,
            ),  # fmt: skip
        )
        params = {"nprobe": self.nlist, "refine": HNSW_REFINE, "ef_search": EF_LADDER[0]}
        meta = {
            "dim": d,
            "count": n,
            "params": params,
            "build_id": "bench",
            "index_type": STORE_INDEXES["hnsw"],
        }
        self.index = StoreIndex(str(where), table, meta)
        self.path = where

    def ladder(self) -> list[int]:
        return list(EF_LADDER)

    def set(self, value: int) -> None:
        self.index.configure(ef_search=value)


class MilvusLite:
    name = "milvus-lite"

    def build(self, base: np.ndarray, where: Path) -> None:
        from pymilvus import MilvusClient

        from sentcl.index.store_build import default_partitions

        self.client = MilvusClient(str(where / "milvus.db"))
        n, d = base.shape
        self.client.create_collection("vectors", dimension=d, metric_type="IP", auto_id=False)
        for i in range(0, n, 5000):
            rows = [{"id": int(j), "vector": base[j].tolist()} for j in range(i, min(n, i + 5000))]
            self.client.insert("vectors", rows)
        self.client.release_collection("vectors")
        self.client.drop_index("vectors", "vector")
        self.nlist = default_partitions(n)
        params = self.client.prepare_index_params()
        params.add_index("vector", index_type="IVF_FLAT", metric_type="IP", params={"nlist": self.nlist})
        self.client.create_index("vectors", params)
        self.client.load_collection("vectors")
        self.path = where

    def ladder(self) -> list[int]:
        return [p for p in NPROBE_LADDER if p <= self.nlist]

    def set(self, value: int) -> None:
        self.nprobe = value

    def search(self, q: np.ndarray) -> np.ndarray:
        found = self.client.search(
            "vectors",
            data=q.tolist(),
            limit=K,
            search_params={"metric_type": "IP", "params": {"nprobe": self.nprobe}},
        )
        out = np.full((len(q), K), -1, dtype=np.int64)  # (Q, K)
        for r, hits in enumerate(found):
            ids = [int(h["id"]) for h in hits][:K]
            out[r, : len(ids)] = ids
        return out


class FaissHnsw:
    name = "faiss-hnsw"

    def build(self, base: np.ndarray, where: Path) -> None:
        import faiss

        from sentcl.index.faiss_build import new_index
        from sentcl.index.faiss_params import IndexParams

        faiss.omp_set_num_threads(1)
        params = IndexParams().resolved("hnsw", base.shape[1], len(base))
        self.index = new_index("hnsw", base.shape[1], params)
        self.index.add(base)
        faiss.write_index(self.index, str(where / "index.faiss"))
        self.path = where

    def ladder(self) -> list[int]:
        return list(EF_LADDER)

    def set(self, value: int) -> None:
        self.index.hnsw.efSearch = value

    def search(self, q: np.ndarray) -> np.ndarray:
        return self.index.search(q, K)[1]


ENGINES = {"lancedb": Lance, "lancedb-hnsw": LanceHnsw, "milvus-lite": MilvusLite, "faiss-hnsw": FaissHnsw}


def data(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray, str]:
    if args.source == "synthetic":
        base = mixture(args.n, 384, 1000, 16, seed=0)
        queries = mixture(args.queries, 384, 1000, 16, seed=0, draw_seed=2)
        return (
            base,
            queries,
            f"{args.n} vectors of bench/index.py's mixture (D 384), {args.queries} fresh draws",
        )
    from bench.index_corpus import stsb_test_sentences
    from sentcl.data.shards import read_manifest

    shards = Path(args.cache) / "shards"
    recs = sorted(read_manifest(shards)["shards"], key=lambda r: r["start_line"])
    parts, rows = [], 0
    for rec in recs:  # the contiguous finished shards from line 1
        if rec["start_line"] != rows + 1 or rows >= args.n:
            break
        parts.append(np.load(shards / rec["file"]))
        rows += rec["rows"]
    base = np.concatenate(parts)[: args.n].astype(np.float32)  # (N, 384)
    qfile = Path(args.cache) / "queries.npy"
    if not qfile.is_file():
        from sentcl.modeling.open import load_encoder

        texts = stsb_test_sentences(Path(args.data_dir))
        np.save(
            qfile, np.asarray(load_encoder("all-MiniLM-L6-v2").encode(texts, batch_size=128, normalize=True))
        )
    queries = np.load(qfile).astype(np.float32)[: args.queries]
    source = (
        f"{len(base)} all-MiniLM-L6-v2 embeddings of the offline corpus; {len(queries)} STS-B test queries"
    )
    return base, queries, source


def tune(engine: Any, queries: np.ndarray, exact: np.ndarray, target: float) -> tuple[int, float]:
    """The first setting of the ladder whose recall@10 reaches ``target`` (else the last): (setting, recall)."""
    best = (0, 0.0)
    for value in engine.ladder():
        engine.set(value)
        r = recall(engine.search(queries), exact)
        best = (value, r)
        if r >= target:
            break
    return best


def timed(engine: Any, queries: np.ndarray, one: int) -> tuple[float, float]:
    start = time.perf_counter()
    for i in range(one):
        engine.search(queries[i : i + 1])
    single = one / (time.perf_counter() - start)
    start = time.perf_counter()
    for i in range(0, len(queries), BATCH):
        engine.search(queries[i : i + BATCH])
    return single, len(queries) / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", choices=("real", "synthetic"), default="synthetic")
    p.add_argument("--n", type=int, default=200_000)
    p.add_argument("--queries", type=int, default=1024)
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--target", type=float, default=0.95)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--one-query", type=int, default=200)
    p.add_argument("--cache", default="runs/bench-real")
    p.add_argument("--data-dir", default=os.environ.get("SENTCL_DATA", "../shared/data"))
    p.add_argument("--output", default="bench/results/store.json")
    args = p.parse_args(argv)
    from bench.common import machine_info

    head = {
        "benchmark": "store",
        "command": "python -m bench.store " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine_info(1),
        "config": vars(args),
    }
    head["machine"]["versions"].update(
        {k: _version(k) for k in ("lancedb", "pylance", "pymilvus", "milvus-lite", "faiss-cpu", "pyarrow")}
    )
    base, queries, source = data(args)
    exact = exact_top(base, queries)
    work = Path(tempfile.mkdtemp(prefix="bench-store-"))
    rows, engines = [], []
    try:
        for name in args.engines.split(","):
            engine = ENGINES[name]()
            before = rss_mb()
            start = time.perf_counter()
            (work / name).mkdir()
            engine.build(base, work / name)
            build_s = time.perf_counter() - start
            lance = next((r["recall_at_10"] for r in rows if r["engine"] == "lancedb"), args.target)
            target = args.target if name != "faiss-hnsw" else lance  # faiss at the store's recall
            setting, got = tune(engine, queries, exact, target)
            engine.set(setting)
            rows.append(
                {
                    "engine": name,
                    "setting": setting,
                    "recall_at_10": round(got, 4),
                    "build_s": round(build_s, 1),
                    "rss_growth_mb": round(rss_mb() - before, 1),
                    "disk_mb": disk_mb(work / name),
                    "single": [],
                    "batch": [],
                }
            )
            engines.append(engine)
            print(
                f"{name}: built in {build_s:.1f}s, setting {setting}, recall {got:.4f}",
                file=sys.stderr,
                flush=True,
            )
        for rnd in range(args.rounds):  # alternating rounds, rotated order
            for j in range(len(engines)):
                i = (j + rnd) % len(engines)
                single, batch = timed(engines[i], queries, args.one_query)
                rows[i]["single"].append(round(single, 1))
                rows[i]["batch"].append(round(batch, 1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    faiss_row = next((r for r in rows if r["engine"] == "faiss-hnsw"), None)
    for r in rows:
        r["qps_one_query"], r["qps_batch64"] = median(r["single"]), median(r["batch"])
        if faiss_row:
            r["x_faiss_one_query"] = round(r["qps_one_query"] / median(faiss_row["single"]), 3)
            r["x_faiss_batch64"] = round(r["qps_batch64"] / median(faiss_row["batch"]), 3)
    headers = [
        "engine",
        "setting",
        "recall@10",
        "QPS 1",
        "QPS 64",
        "x faiss 64",
        "build s",
        "RSS +MB",
        "disk MB",
    ]
    table = [
        [
            r["engine"],
            r["setting"],
            r["recall_at_10"],
            r["qps_one_query"],
            r["qps_batch64"],
            r.get("x_faiss_batch64"),
            r["build_s"],
            r["rss_growth_mb"],
            r["disk_mb"],
        ]
        for r in rows
    ]
    print(format_table(headers, table))
    payload = {**head, "data": source, "n": len(base), "queries": len(queries), "rows": rows}
    write_json(args.output, payload)
    return payload


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    main()
