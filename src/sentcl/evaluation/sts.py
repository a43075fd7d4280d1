"""STS evaluation as SentEval runs it for SimCSE ("test" mode), plus a cheap dev mode.

A pair (u, v) of sentence embeddings scores cos(u, v) = u·v / (‖u‖‖v‖); a task scores
ρ = 100 · Spearman(cos, gold). **Unit: every correlation in a result dict is in percent (×100).**

Result of :func:`evaluate_sts` (one key per task evaluated, plus ``"avg"``)::

    {"STS12": {"all": ρ_pooled, "mean": ..., "wmean": ..., "n": 3108,
               "pearson": {"all": ..., "mean": ..., "wmean": ...},
               "subsets": {"MSRpar": {"spearman": ..., "pearson": ..., "n": 750}, ...}},
     ...,
     "STSBenchmark": {"spearman": ..., "pearson": ..., "n": 1379, "split": "test"},
     "SICKRelatedness": {"spearman": ..., "pearson": ..., "n": 4927, "split": "test"},
     "avg": mean of main_score over the tasks evaluated}

STS12-16 "all" pools every subset's pairs into one Spearman (the number the SimCSE paper reports);
"mean" is the plain mean of subset Spearmans, "wmean" the mean weighted by subset size. STS-B and
SICK-R use plain cosine Spearman on one split (no trained regressor), as SimCSE's "test" mode does.
Sentences are whitespace-normalised (SentEval splits on whitespace, SimCSE's batcher re-joins with
one space). A zero vector scores cosine 0 (SentEval's ``nan_to_num``). The files are read by
``sentcl.evaluation.senteval_readers`` (``load_sts_task``), with every other SentEval reader.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import pearsonr, spearmanr

from sentcl.config.sts_table import DISPLAY_NAMES, format_sts_table, main_score, row_label  # noqa: F401 - re-exported
from sentcl.evaluation.senteval_readers import STS_TASKS, STS_YEARS, Pair, load_sts_task
from sentcl.files.read import write_json_strict
from sentcl.types import EncodeFn

OnDone = Callable[[str], None]  # called with a task's name when it is done (progress)


# ---------------------------------------------------------------------- scoring


def _cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cos(a_i, b_i) for each row i: (n, D), (n, D) -> (n,); 0 where a norm is 0."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    dots = np.einsum("nd,nd->n", a, b)  # (n,)
    denom = np.sqrt(np.einsum("nd,nd->n", a, a) * np.einsum("nd,nd->n", b, b))  # (n,)
    return np.divide(dots, denom, out=np.zeros_like(dots), where=denom > 0)


def undefined_reason(sims: np.ndarray, gold: np.ndarray) -> str | None:
    """Why no correlation of ``sims`` with ``gold`` exists (a model that gives every pair one cosine), or None."""
    if not np.isfinite(sims).all():
        return "non-finite predictions"
    if (sims == sims[0]).all():
        return "constant predictions"
    if (gold == gold[0]).all():
        return "constant gold scores"
    return None


def _correlations(sims: np.ndarray, gold: np.ndarray, name: str) -> dict[str, Any]:
    """{"spearman": 100·ρ, "pearson": 100·r, "n"}. Where no correlation exists (``undefined_reason``) both are
    nan, as in SentEval, and "undefined" says why (strict JSON writes the nan as null beside it)."""
    sims, gold = np.asarray(sims, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    if sims.shape != gold.shape or sims.ndim != 1:
        raise ValueError(
            f"{name}: predicted {sims.shape} and gold {gold.shape} must be equal-length 1-D arrays"
        )
    if len(sims) < 2:
        raise ValueError(f"{name}: a correlation needs at least 2 pairs, got {len(sims)}")
    reason = undefined_reason(sims, gold)
    if reason is not None:
        return {"spearman": math.nan, "pearson": math.nan, "n": len(sims), "undefined": reason}
    rho = float(spearmanr(sims, gold).statistic)
    r = float(pearsonr(sims, gold).statistic)
    return {"spearman": 100.0 * rho, "pearson": 100.0 * r, "n": len(sims)}


def aggregate(subset_scores: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
    """SentEval's STS aggregation of subset -> (predicted sims, gold), in percent.

    all = ρ(concat sims, concat gold); mean = Σ_k ρ_k / K; wmean = Σ_k n_k ρ_k / Σ_k n_k.
    """
    if not subset_scores:
        raise ValueError("aggregate needs at least one subset")
    subsets = {name: _correlations(s, g, name) for name, (s, g) in subset_scores.items()}
    sims = np.concatenate([np.asarray(s, dtype=np.float64) for s, _ in subset_scores.values()])  # (N,)
    gold = np.concatenate([np.asarray(g, dtype=np.float64) for _, g in subset_scores.values()])  # (N,)
    pooled = _correlations(sims, gold, "all")
    n = np.array([v["n"] for v in subsets.values()], dtype=np.float64)

    def means(key: str) -> tuple[float, float]:
        values = np.array([v[key] for v in subsets.values()])
        return float(values.mean()), float((values * n).sum() / n.sum())

    mean, wmean = means("spearman")
    p_mean, p_wmean = means("pearson")
    return {
        "all": pooled["spearman"],
        "mean": mean,
        "wmean": wmean,
        "n": pooled["n"],
        "pearson": {"all": pooled["pearson"], "mean": p_mean, "wmean": p_wmean},
        "subsets": subsets,
    } | ({"undefined": pooled["undefined"]} if "undefined" in pooled else {})


def _score_task(
    encode: EncodeFn, subsets: Mapping[str, list[Pair]]
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Encode a task's unique sentences in one call; subset -> (cosines, gold)."""
    unique = list(dict.fromkeys(s for pairs in subsets.values() for p in pairs for s in p[:2]))
    emb = np.asarray(encode(unique))
    if emb.ndim != 2 or emb.shape[0] != len(unique):
        raise ValueError(f"encode returned shape {emb.shape} for {len(unique)} sentences; expected (N, D)")
    row = {s: i for i, s in enumerate(unique)}
    scores = {}
    for name, pairs in subsets.items():
        idx1 = np.array([row[p[0]] for p in pairs], dtype=np.int64)
        idx2 = np.array([row[p[1]] for p in pairs], dtype=np.int64)
        gold = np.array([p[2] for p in pairs], dtype=np.float64)
        scores[name] = (_cosine_rows(emb[idx1], emb[idx2]), gold)
    return scores


def pairs_correlation(encode: EncodeFn, pairs: list[Pair], name: str) -> dict[str, Any]:
    """{"spearman", "pearson" (×100), "n"} of cos(u, v) against the gold scores of ``pairs`` (s1, s2, gold)."""
    sims, gold = _score_task(encode, {name: pairs})[name]
    return _correlations(sims, gold, name)


def _evaluate(
    encode: EncodeFn, data_dir: Path, tasks: Sequence[str], split: str, on_done: OnDone | None = None
) -> dict[str, Any]:
    unknown = [t for t in tasks if t not in STS_TASKS]
    if unknown:
        raise ValueError(f"unknown STS task(s) {', '.join(unknown)}; valid: {', '.join(STS_TASKS)}")
    result: dict[str, Any] = {}
    for task in tasks:
        agg = aggregate(_score_task(encode, load_sts_task(data_dir, task, split)))
        if task in STS_YEARS:
            result[task] = agg
        else:
            result[task] = {**agg["subsets"][split], "split": split}
        if on_done is not None:
            on_done(task)
    result["avg"] = float(np.mean([main_score(result, t) for t in tasks])) if tasks else math.nan
    return result


def evaluate_sts(
    encode: EncodeFn,
    data_dir: Path,
    tasks: Sequence[str] = STS_TASKS,
    split: str = "test",
    on_done: OnDone | None = None,
) -> dict[str, Any]:
    """Score ``tasks`` on ``split`` (layout in the module docstring, percent); "avg" = mean main score.
    ``on_done(task)`` is called after each task (progress)."""
    return _evaluate(encode, data_dir, tuple(tasks), split, on_done)


def evaluate_sts_dev(
    encode: EncodeFn,
    data_dir: Path,
    tasks: Sequence[str] = ("STSBenchmark", "SICKRelatedness"),
    on_done: OnDone | None = None,
) -> dict[str, Any]:
    """Dev mode for training: STS-B dev and SICK-R trial (``tasks=("STSBenchmark",)`` reads and encodes only STS-B dev)."""
    bad = [t for t in tasks if t in STS_YEARS]
    if bad:
        raise ValueError(
            f"{', '.join(bad)} have no dev split; dev tasks are STSBenchmark and SICKRelatedness"
        )
    return _evaluate(encode, data_dir, tuple(tasks), "dev", on_done)


def write_json(result: Mapping[str, Any], path: str | Path) -> Path:
    """Write a result dict as strict JSON (nan -> null), atomically, creating parent folders; returns the path."""
    return write_json_strict(path, result)
