"""Pick the cheapest search setting of a built index that reaches a recall target (``--target-recall``).

Queries: a seeded sample of the corpus's own vectors (1,000, at most N / 10) held OUT of the index while
it is tuned (the build adds them last, after tuning, and keeps the id -> row table in ``rows.npy``), or the
rows of a .npy file of query embeddings (``--queries FILE``). Held out, because a row that is in the index
is found with its neighbours far too easily: on real MiniLM embeddings, rows searched in place reached
recall 0.99 at efSearch 16 where STS-B test queries got 0.80 (bench/index_real.py). Reference: the exact
top-10 by cosine over every shard (numpy, one shard at a time; the held-out rows excluded).
Recall@10 = |approximate top-10 ∩ exact top-10| / 10, averaged over the queries, counted on scores: a found
row whose exact cosine with the query is as high as the exact 10th best's (within ``TIE_TOLERANCE``) is a hit
too. Among tied rows (duplicate sentences, common in scraped corpora: 200,000 copies of one line) any ten are
a right answer, and an id-set count would call a perfect search recall 0.0. The tuning record counts the
queries whose 10th and 11th best are tied (``tied_queries``), and the build warns when most are.

Held-out corpus rows are still easier queries than outside ones: on real MiniLM embeddings (the wiki/
SNLI/SentEval/STS corpus of bench/index_real.py, 10k-20k rows) an IVF setting with recall 0.95 on held-out
rows gave 0.83-0.88 on STS-B test queries, and 0.99 on held-out rows gave 0.955 for IVF but 0.932 for HNSW
at 10k rows (the corpus holds paraphrases of its own rows: SNLI hypotheses of one premise, both sides of
the STS and SICK pairs). So with held-out rows the setting is tuned to 1 - (1 - target) / 5 for ivf and
ivfpq (0.99 for a target of 0.95) and 1 - (1 - target) / 10 for hnsw (0.995), recorded as ``tuned_to``;
with ``--queries FILE`` (the user's own queries) to the target itself. docs/performance.md, "Search on
real embeddings", has the measurements.

Settings are tried cheapest first, and the first that reaches the target is kept:

* ``ivf``: nprobe 1, 2, 4, 8, 12, 16, 24, 32, ... (×1.5 steps) up to nlist (nprobe = nlist is exhaustive);
* ``hnsw``: efSearch 16, 24, 32, 48, ..., 2048;
* ``ivfpq``: for each refine factor 1, 2, 4, 8 (the top refine·k PQ candidates re-scored with the exact
  vectors read from the memory-mapped shards), the smallest nprobe that reaches the target; of those, the
  one with the highest measured queries per second. When none of them reaches it, the refine factor keeps
  doubling, 16, 32, 64, until one does: the 48-byte codes of real MiniLM embeddings lose too much of the
  ranking from 40k rows on (refine 8 stopped at 0.965-0.977 on held-out rows even scanning every cell;
  refine 16 reached 0.99 at 40k: docs/performance.md).
* ``binary`` (flat) and ``int8``: the refine factor r (the top r·k by Hamming distance, or by the 8-bit
  inner product, re-scored with the float vectors) along 1, 2, 3, 4, 6, 8, 12, 16, ... (×1.5 steps) up to
  1,024; ``binary`` over an HNSW graph: for each r of 1, 2, 4, ..., 64 the smallest efSearch from k·r to
  4·k·r that reaches the target, and of those the fastest, as for ivfpq.

A setting given explicitly (``--nprobe``, ``--ef-search``, ``--refine``) is not tuned, only measured. When
no setting reaches the target, the one with the highest recall is kept and ``reached`` is false (the
build logs a warning). The measured recall, the queries per second (the queries in one batch, and one at
a time for up to 200 of them) and the sweep go into ``index.json`` under ``tuning``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from sentcl.data.shards import ShardSet
from sentcl.similarity import unit_rows

logger = logging.getLogger(__name__)
K = 10
TUNE_QUERIES = 1000
# Held-out corpus rows are easier queries than outside ones (module doc), so with them the search setting
# is tuned to the stricter recall 1 - (1 - target) / margin: 0.99 (ivf, ivfpq) or 0.995 (hnsw) for 0.95.
HELD_OUT_MARGIN = {"ivf": 5, "ivfpq": 5, "hnsw": 10, "binary": 5, "int8": 5}
ONE_QUERY_SAMPLE = 200
REFINES = (1, 2, 4, 8)
REFINES_ESCALATED = (16, 32, 64)  # tried in order only while no refine factor has reached the target
EF_LADDER = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048)
MAX_RESCORE = 1024  # the largest refine factor tried for binary and int8
BINARY_HNSW_REFINES = (1, 2, 4, 8, 16, 32, 64)


def refine_ladder(top: int = MAX_RESCORE) -> list[int]:
    """1, 2, 3, 4, 6, 8, 12, 16, ... (×1.5 steps, rounded) up to ``top``."""
    out, v = [1, 2, 3, 4], 4.0
    while v < top:
        v *= 1.5
        out.append(int(round(v)))
    return sorted({min(x, top) for x in out})


def nprobe_ladder(nlist: int) -> list[int]:
    """1, 2, 4, 8, then ×1.5 steps, ending with nlist (exhaustive)."""
    out, v = [1, 2, 4, 8], 8
    while v < nlist:
        v = int(round(v * 1.5))
        out.append(v)
    return sorted({min(x, nlist) for x in out})


# float32 cosines of unit rows computed two ways (a matrix product, a row's dot product) differ by ~1e-7
TIE_TOLERANCE = 1e-5


@dataclass
class Probe:
    """Tuning queries (Q, D) unit rows, their exact top-K ids (Q, K) and the exact K-th best cosine (Q,);
    ``own_rows``: the corpus row of each query when the queries are rows IN the index (each is then left out
    of its own result), else None; ``shards``: the vectors the found rows' exact cosines are read from."""

    queries: np.ndarray
    own_rows: np.ndarray | None
    exact: np.ndarray
    source: str
    outside: bool = False  # the user's own queries (--queries FILE), not corpus rows
    kth: np.ndarray | None = None
    shards: ShardSet | None = None
    tied: int = 0  # queries whose K-th and (K+1)-th best are tied (duplicate vectors)


def exact_top(shards: ShardSet, queries: np.ndarray, k: int, leave_out: np.ndarray | None) -> np.ndarray:
    """Exact top-k row ids by cosine over every shard, the rows ``leave_out`` excluded: (Q, k) int64."""
    return exact_scored(shards, queries, k, leave_out)[0]


def exact_scored(
    shards: ShardSet, queries: np.ndarray, k: int, leave_out: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """``exact_top``'s ids (Q, k) int64 and their cosines (Q, k) float32, best first."""
    q = unit_rows(np.asarray(queries, dtype=np.float32))  # (Q, D)
    best_s = np.full((len(q), 0), -np.inf, dtype=np.float32)  # (Q, <=k)
    best_i = np.zeros((len(q), 0), dtype=np.int64)
    for start, arr in shards.iter_arrays():
        s = q @ unit_rows(np.asarray(arr, dtype=np.float32)).T  # (Q, rows)
        if leave_out is not None:
            cols = leave_out[(leave_out >= start) & (leave_out < start + len(arr))] - start
            s[:, cols] = -np.inf
        ids = np.broadcast_to(np.arange(start, start + len(arr)), s.shape)  # (Q, rows)
        cat_s = np.concatenate([best_s, s], axis=1)  # (Q, m)
        cat_i = np.concatenate([best_i, ids], axis=1)
        top = np.argsort(-cat_s, axis=1, kind="stable")[:, :k]  # (Q, k)
        best_s = np.take_along_axis(cat_s, top, axis=1)
        best_i = np.take_along_axis(cat_i, top, axis=1)
    return best_i, best_s


def truth(
    shards: ShardSet, queries: np.ndarray, leave_out: np.ndarray | None, own: np.ndarray | None = None
) -> dict[str, Any]:
    """Probe fields of the exact search: top-K ids, the K-th best cosine, and the count of queries whose K-th
    and (K+1)-th best are tied (the top K is then one of several right answers). ``own``: each query's own
    row, in the index, left out of its own result only."""
    ids, scores = exact_scored(shards, queries, K + 1 + (own is not None), leave_out)  # (Q, K + 1 [+ 1])
    if own is not None:
        width = ids.shape[1] - 1  # the same for every query (K + 1 unless the index is tiny)
        kept = [np.flatnonzero(r != o)[:width] for r, o in zip(ids, own, strict=True)]
        ids = np.stack([r[c] for r, c in zip(ids, kept, strict=True)])  # (Q, K + 1)
        scores = np.stack([r[c] for r, c in zip(scores, kept, strict=True)])  # (Q, K + 1)
    kth = scores[:, min(K, scores.shape[1]) - 1]  # (Q,)
    tied = int(np.sum(scores[:, K] >= kth - TIE_TOLERANCE)) if scores.shape[1] > K else 0
    return {"exact": ids[:, :K], "kth": kth, "shards": shards, "tied": tied}


def found_scores(shards: ShardSet, queries: np.ndarray, found: np.ndarray) -> np.ndarray:
    """The exact cosine of each found row with its query (-inf where none was found): (Q, k) float32."""
    out = np.full(found.shape, -np.inf, dtype=np.float32)  # (Q, k)
    valid = found >= 0
    if valid.any():
        rows = unit_rows(np.asarray(shards.gather(found[valid]), dtype=np.float32))  # (n, D)
        q = np.repeat(unit_rows(np.asarray(queries, dtype=np.float32)), valid.sum(axis=1), axis=0)  # (n, D)
        out[valid] = np.einsum("nd,nd->n", q, rows)  # (n,)
    return out


def held_out_rows(rows: int, n: int, seed: int) -> np.ndarray:
    """The seeded sample of corpus rows held out as tuning queries: min(n, N // 10) rows, sorted."""
    n = max(1, min(n, rows // 10))
    return np.sort(np.random.default_rng([seed, 21]).choice(rows, size=n, replace=False))


def probe_from_rows(shards: ShardSet, rows: np.ndarray) -> Probe:
    """The held-out rows as queries: the index is searched before they are added, and the reference is
    the exact top-10 over the other rows."""
    queries = unit_rows(np.asarray(shards.gather(rows), dtype=np.float32))  # (H, D)
    source = f"{len(rows)} corpus rows held out of the index while tuning"
    known = truth(shards, queries, rows)
    return Probe(queries, None, known.pop("exact"), source, **known)


def probe_from_file(shards: ShardSet, path: Any) -> Probe:
    """The user's query embeddings of ``--queries``, read by the one array reader (``sentcl.files.arrays``):
    real, finite, non-zero rows of the index's width, normalised without overflow."""
    from sentcl.files.arrays import check_vectors
    from sentcl.files.read import load_npy

    q = np.asarray(load_npy(path, mmap=False, what="--queries"))
    queries = check_vectors(q, f"--queries {path}", width=shards.dim, directions=True)  # (Q, D) unit rows
    source = f"{len(q)} query embeddings from {path}"
    known = truth(shards, queries, None)
    return Probe(queries, None, known.pop("exact"), source, outside=True, **known)


def approximate(ann: Any, probe: Probe, k: int = K) -> np.ndarray:
    """The index's top-k per probe query, the query's own row left out: (Q, k) int64 (-1 padded)."""
    extra = 1 if probe.own_rows is not None else 0
    _, ids = ann.search(probe.queries, k + extra)  # (Q, k + extra)
    if not extra:
        return ids[:, :k]
    out = np.full((len(ids), k), -1, dtype=np.int64)
    for r, (row, own) in enumerate(zip(ids, probe.own_rows, strict=True)):  # type: ignore[arg-type]
        kept = row[row != own][:k]
        out[r, : len(kept)] = kept
    return out


def recall(
    found: np.ndarray, exact: np.ndarray, scores: np.ndarray | None = None, kth: np.ndarray | None = None
) -> float:
    """Recall@k of ``found`` (Q, k) ids against the ``exact`` (Q, k) ids; with the found rows' exact cosines
    ``scores`` (Q, k) and the exact k-th best cosine ``kth`` (Q,), a found row as close as the k-th best is a
    hit too (ties: module doc)."""
    k = exact.shape[1]
    hits = []
    for r, (a, b) in enumerate(zip(found, exact, strict=True)):
        good = set(a[a >= 0]) & set(b)
        if scores is not None and kth is not None:
            good |= {
                int(i) for i, s in zip(a, scores[r], strict=True) if i >= 0 and s >= kth[r] - TIE_TOLERANCE
            }
        hits.append(min(len(good), k) / k)
    return float(np.mean(hits))


def probe_recall(probe: Probe, found: np.ndarray) -> float:
    """``recall`` of the found ids (Q, K) on the probe, ties counted where the probe knows its vectors."""
    if probe.shards is None or probe.kth is None:
        return recall(found, probe.exact)
    return recall(found, probe.exact, found_scores(probe.shards, probe.queries, found), probe.kth)


def measure(ann: Any, probe: Probe, setting: dict[str, int], one_query: bool = False) -> dict[str, Any]:
    """Recall@10 and queries per second of ``ann`` at ``setting`` on the probe."""
    ann.configure(**setting)
    start = time.perf_counter()
    found = approximate(ann, probe)
    row: dict[str, Any] = {
        **setting,
        "recall_at_10": round(probe_recall(probe, found), 4),
        "qps": round(len(probe.queries) / max(time.perf_counter() - start, 1e-9), 1),
    }
    if one_query:
        sample = probe.queries[:ONE_QUERY_SAMPLE]
        start = time.perf_counter()
        for q in sample:
            ann.search(q[None, :], K + 1)
        row["qps_one_query"] = round(len(sample) / max(time.perf_counter() - start, 1e-9), 1)
    return row


def _first_reaching(ann: Any, probe: Probe, key: str, ladder: list[int], fixed: dict, target: float) -> list:
    """Rows of the ladder tried in order, stopping at the first that reaches ``target``."""
    rows = []
    for value in ladder:
        rows.append(measure(ann, probe, {**fixed, key: value}))
        if rows[-1]["recall_at_10"] >= target:
            break
    return rows


Run = tuple[str, list[int], dict]  # (tuned key, ladder, fixed settings)


def candidates(kind: str, params: dict[str, Any], explicit: dict[str, int]) -> tuple[list[Run], list[Run]]:
    """The runs for ``kind`` (an explicit setting is a ladder of one), and the escalation runs tried in
    order only while no run has reached the target (ivfpq's larger refine factors)."""
    if kind == "hnsw":
        efs = [explicit["ef_search"]] if "ef_search" in explicit else list(EF_LADDER)
        return [("ef_search", efs, {})], []
    if kind in ("binary", "int8"):
        return _rescored(params, explicit), []
    ladder = [explicit["nprobe"]] if "nprobe" in explicit else nprobe_ladder(params["nlist"])
    if kind == "ivf":
        return [("nprobe", ladder, {})], []
    if "refine" in explicit:
        return [("nprobe", ladder, {"refine": explicit["refine"]})], []
    runs = [("nprobe", ladder, {"refine": r}) for r in REFINES]
    return runs, [("nprobe", ladder, {"refine": r}) for r in REFINES_ESCALATED]


def _rescored(params: dict[str, Any], explicit: dict[str, int]) -> list[Run]:
    """binary and int8: the refine factor alone (flat codes), or (efSearch, refine) over a binary graph."""
    refines = [explicit["refine"]] if "refine" in explicit else None
    if params.get("binary_index") != "hnsw":
        return [("refine", refines or refine_ladder(), {})]
    if "ef_search" in explicit:
        return [("refine", refines or refine_ladder(), {"ef_search": explicit["ef_search"]})]
    # faiss widens the beam to the k·r results asked for, so an efSearch below k·r repeats a setting; past
    # 4·k·r the recall of the k·r candidates has stopped growing (measured: it is the r that limits it)
    return [
        ("ef_search", [e for e in EF_LADDER if K * r <= e <= 4 * K * r] or [EF_LADDER[-1]], {"refine": r})
        for r in (refines or BINARY_HNSW_REFINES)
    ]


def tune(ann: Any, kind: str, params: dict[str, Any], probe: Probe, wanted: float, explicit: dict) -> dict:
    """The ``tuning`` record of index.json (module doc); leaves ``ann`` configured at the chosen setting."""
    target = wanted if probe.outside else 1 - (1 - wanted) / HELD_OUT_MARGIN[kind]
    sweep: list[dict[str, Any]] = []
    finals: list[dict[str, Any]] = []
    runs, escalation = candidates(kind, params, explicit)
    for i, (key, ladder, fixed) in enumerate(runs + escalation):
        if i >= len(runs) and any(r["recall_at_10"] >= target for r in finals):
            break  # escalate only while nothing has reached the target
        rows = _first_reaching(ann, probe, key, ladder, fixed, target)
        sweep += rows
        finals.append(rows[-1])
    reaching = [r for r in finals if r["recall_at_10"] >= target]
    if reaching:
        best = max(reaching, key=lambda r: r["qps"])
    else:
        best = max(sweep, key=lambda r: (r["recall_at_10"], r["qps"]))
        logger.warning(
            "no %s search setting reached recall@10 %.3f on %s (best %.4f): keeping the best",
            kind,
            target,
            probe.source,
            best["recall_at_10"],
        )
    setting = {k: best[k] for k in ("nprobe", "ef_search", "refine") if k in best}
    final = measure(ann, probe, setting, one_query=True)
    if probe.tied * 2 > len(probe.queries):
        logger.warning(
            "%d of %d tuning queries have tied neighbours at rank %d (duplicate vectors: the corpus repeats "
            "sentences); recall counts any row as close as the exact %dth as found",
            probe.tied,
            len(probe.queries),
            K,
            K,
        )
    return {
        "target_recall": wanted,
        "tuned_to": round(target, 6),
        "reached": final["recall_at_10"] >= target,
        "k": K,
        "queries": probe.source,
        "tied_queries": probe.tied,
        "setting": setting,
        "recall_at_10": final["recall_at_10"],
        "qps": final["qps"],
        "qps_one_query": final["qps_one_query"],
        "sweep": sweep,
    }
