"""SentEval transfer tasks: a linear classifier on frozen sentence embeddings, under one of two protocols.

``protocol="senteval"`` (the default): SentEval's own protocol as SimCSE's ``evaluation.py`` runs it, so the
numbers compare with the papers' tables: a PyTorch logistic regression, L2 grid 1e-5..1e-2, early stopping,
seed 1111, examples in SentEval's order, MRPC features [|u−v|, u∗v]. ``fast=False`` is SimCSE's ``--mode
test`` (Adam, batch 64, tenacity 5, epoch size 4, 10 folds), ``fast=True`` its ``--mode fasttest`` (RMSprop,
batch 128, tenacity 3, epoch size 2, 5 folds). Details and sources: :mod:`sentcl.evaluation.senteval_classifier`.

``protocol="sklearn"`` (ours, kept for continuity with earlier results): SentEval's ``usepytorch=False``
variant. p(y | f(x)) = softmax(W f(x) + b), trained with L2 penalty ‖W‖²/(2C) (sklearn's LogisticRegression,
lbfgs); the regularisation C is chosen on validation data, as SentEval does for each kind of task:

* MR, CR, SUBJ, MPQA (one labelled set): outer k-fold stratified CV (k=10); inside each outer fold,
  C is picked by an inner k-fold CV on the outer training part, the classifier is refit on that whole
  part and scored on the outer test fold. acc = mean test accuracy over the outer folds.
* SST-2 (train/dev/test): C picked by dev accuracy; refit on train; scored on test.
* TREC, MRPC (train/test): C picked by k-fold CV on train; refit on train; scored on test.
  MRPC features are [u, v, |u−v|, u∗v] of the two sentences' embeddings (``mrpc_include_uv=False``
  gives SentEval's own [|u−v|, u∗v]); MRPC also reports F1 of the paraphrase class.

C grids (SentEval's sklearn grids): 2^-2..2^3 for the inner-CV and dev-split tasks, 2^-1..2^5 for
TREC/MRPC. ``fast=True`` (for development): 5 folds instead of 10 and every other C of each grid; seed 0.
**Unit: every accuracy and F1 is in percent.** Result layout of :func:`evaluate_transfer` (the senteval
protocol reports the chosen L2 as "l2reg" where the sklearn one reports "C")::

    {"MR": {"acc": 77.1, "dev_acc": 77.4, "n": 10662, "C": [per-fold C], "protocol": "sklearn"}, ...,
     "SST2": {"acc": ..., "dev_acc": ..., "n": 70042, "n_train": ..., "n_dev": ..., "n_test": ..., "C": 1.0},
     "MRPC": {"acc": ..., "f1": ..., "dev_acc": ..., "n": 5801, "n_train": 4076, "n_test": 1725, "C": 2.0},
     "avg": mean "acc" over the tasks evaluated}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

from sentcl.config.names import TRANSFER_TASKS
from sentcl.evaluation.senteval_classifier import FAST_MODE, TEST_MODE, senteval_order, split_classifier
from sentcl.evaluation.senteval_classifier import SEED as SENTEVAL_SEED
from sentcl.evaluation.senteval_classifier import inner_kfold as se_inner_kfold
from sentcl.evaluation.senteval_classifier import kfold_then_test as se_kfold_then_test
from sentcl.evaluation.senteval_readers import (
    BINARY_FILES,
    LabelledPairs,
    LabelledSentences,
    read_binary_task,
    read_mrpc,
    read_sst2,
    read_trec,
)
from sentcl.files.paths import resolve_data_dir
from sentcl.types import EncodeFn

PROTOCOLS = ("senteval", "sklearn")
DEFAULT_PROTOCOL = "senteval"  # SentEval's own protocol, as SimCSE reports; sklearn: our earlier one
Folds = list[tuple[np.ndarray, np.ndarray]]

C_GRID_INNER = tuple(2.0**t for t in range(-2, 4))  # SentEval InnerKFoldClassifier / SplitClassifier
C_GRID_KFOLD = tuple(2.0**t for t in range(-1, 6))  # SentEval KFoldClassifier (TREC, MRPC)
MAX_ITER = 1000
# The fits are small: one BLAS/OpenMP thread is as fast unloaded and 10-50x faster on a busy machine
# (measured: TREC lbfgs fits took 10-25 s with 2 threads under load, 0.3 s with 1).
CLASSIFIER_THREADS = 1


# ---------------------------------------------------------------------- building blocks


def stratified_folds(labels: np.ndarray, k: int, seed: int) -> Folds:
    """k (train_idx, test_idx) splits: test folds are disjoint, cover every index, keep class proportions."""
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {labels.shape}")
    if not 2 <= k <= len(labels):
        raise ValueError(f"need 2 <= k <= number of examples ({len(labels)}), got k={k}")
    _, counts = np.unique(labels, return_counts=True)
    if counts.max() < k:
        raise ValueError(f"k={k} folds but no class has {k} examples (class counts {counts.tolist()})")
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    return [(train, test) for train, test in skf.split(np.zeros(len(labels)), labels)]


def mrpc_features(u: np.ndarray, v: np.ndarray, include_uv: bool = True) -> np.ndarray:
    """Pair features [u, v, |u−v|, u∗v] (N, 4D); ``include_uv=False`` gives SentEval's [|u−v|, u∗v] (N, 2D)."""
    u, v = np.asarray(u), np.asarray(v)
    if u.shape != v.shape or u.ndim != 2:
        raise ValueError(f"u and v must be (N, D) arrays of one shape, got {u.shape} and {v.shape}")
    parts = [u, v, np.abs(u - v), u * v] if include_uv else [np.abs(u - v), u * v]
    return np.concatenate(parts, axis=1)  # (N, 4D) or (N, 2D)


def _accuracies_by_c(
    x: np.ndarray, y: np.ndarray, folds: Folds, grid: Sequence[float], seed: int
) -> np.ndarray:
    """Mean held-out accuracy (fraction) of each C in ``grid`` over ``folds``: shape (len(grid),).

    C runs in ascending order with warm starts: the L2-penalised loss is strictly convex, so the
    optimum does not depend on the starting point; warm starts only save iterations.
    """
    scores = np.zeros((len(folds), len(grid)))  # (folds, C values)
    order = np.argsort(grid)
    for f, (train, test) in enumerate(folds):
        clf = LogisticRegression(max_iter=MAX_ITER, random_state=seed, warm_start=True)
        for j in order:
            clf.set_params(C=grid[j])
            clf.fit(x[train], y[train])
            scores[f, j] = clf.score(x[test], y[test])
    return scores.mean(axis=0)


def _fit(x: np.ndarray, y: np.ndarray, c: float, seed: int) -> LogisticRegression:
    return LogisticRegression(C=c, max_iter=MAX_ITER, random_state=seed).fit(x, y)


def inner_kfold_accuracy(
    x: np.ndarray, y: np.ndarray, k: int, grid: Sequence[float], seed: int
) -> dict[str, Any]:
    """SentEval's InnerKFoldClassifier: outer k-fold test accuracy, C picked per outer fold by inner k-fold."""
    test_acc, dev_acc, chosen = [], [], []
    with threadpool_limits(limits=CLASSIFIER_THREADS):
        for train, test in stratified_folds(y, k, seed):
            inner = _accuracies_by_c(x[train], y[train], stratified_folds(y[train], k, seed), grid, seed)
            best = int(np.argmax(inner))
            clf = _fit(x[train], y[train], grid[best], seed)
            test_acc.append(clf.score(x[test], y[test]))
            dev_acc.append(inner[best])
            chosen.append(grid[best])
    return {"acc": 100 * float(np.mean(test_acc)), "dev_acc": 100 * float(np.mean(dev_acc)), "C": chosen}


def kfold_then_test(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    y_test: np.ndarray,
    k: int,
    grid: Sequence[float],
    seed: int,
) -> tuple[dict[str, Any], np.ndarray]:
    """SentEval's KFoldClassifier: C by k-fold CV on train, refit on train, score test; also returns predictions."""
    with threadpool_limits(limits=CLASSIFIER_THREADS):
        cv = _accuracies_by_c(x_train, y_train, stratified_folds(y_train, k, seed), grid, seed)
        best = int(np.argmax(cv))
        pred = _fit(x_train, y_train, grid[best], seed).predict(x_test)
    return {
        "acc": 100 * float(np.mean(pred == y_test)),
        "dev_acc": 100 * float(cv[best]),
        "C": grid[best],
    }, pred


def dev_split_accuracy(
    train: tuple[np.ndarray, np.ndarray],
    dev: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray],
    grid: Sequence[float],
    seed: int,
) -> dict[str, Any]:
    """SentEval's SplitClassifier: C by dev accuracy, refit on train, score test."""
    scores = np.zeros(len(grid))
    with threadpool_limits(limits=CLASSIFIER_THREADS):
        clf = LogisticRegression(max_iter=MAX_ITER, random_state=seed, warm_start=True)
        for j in np.argsort(grid):
            clf.set_params(C=grid[j])
            clf.fit(*train)
            scores[j] = clf.score(*dev)
        best = int(np.argmax(scores))
        acc = _fit(*train, grid[best], seed).score(*test)
    return {"acc": 100 * float(acc), "dev_acc": 100 * float(scores[best]), "C": grid[best]}


# ---------------------------------------------------------------------- tasks


def _encode_unique(encode: EncodeFn, *text_lists: Sequence[str]) -> list[np.ndarray]:
    """Encode the distinct sentences of all lists in one call; one (len(list), D) float64 array per list."""
    unique = list(dict.fromkeys(t for texts in text_lists for t in texts))
    emb = np.asarray(encode(unique))
    if emb.ndim != 2 or emb.shape[0] != len(unique):
        raise ValueError(f"encode returned shape {emb.shape} for {len(unique)} sentences; expected (N, D)")
    row = {t: i for i, t in enumerate(unique)}
    return [emb[np.array([row[t] for t in texts], dtype=np.int64)].astype(np.float64) for texts in text_lists]


def _senteval_sorted(split: LabelledSentences | LabelledPairs, protocol: str) -> Any:
    """The split in SentEval's order (by token count, then label; MRPC: A's count, B's count, label)."""
    if protocol != "senteval":
        return split
    if isinstance(split, LabelledPairs):
        cols = [[len(t.split()) for t in split.first], [len(t.split()) for t in split.second], split.labels]
        i = senteval_order(cols)
        return LabelledPairs([split.first[j] for j in i], [split.second[j] for j in i], split.labels[i])
    i = senteval_order([[len(t.split()) for t in split.texts], split.labels])
    return LabelledSentences([split.texts[j] for j in i], split.labels[i])


def _run_task(
    task: str, encode: EncodeFn, data_dir: Path, fast: bool, protocol: str, seed: int, mrpc_include_uv: bool
) -> dict[str, Any]:
    se = protocol == "senteval"
    cfg = FAST_MODE if fast else TEST_MODE  # senteval protocol
    k = 5 if fast else 10  # sklearn protocol
    grid_inner = C_GRID_INNER[::2] if fast else C_GRID_INNER
    grid_kfold = C_GRID_KFOLD[::2] if fast else C_GRID_KFOLD
    if task in BINARY_FILES:
        data = _senteval_sorted(read_binary_task(data_dir, task), protocol)
        (x,) = _encode_unique(encode, data.texts)
        y = data.labels
        res = se_inner_kfold(x, y, cfg, seed=seed) if se else inner_kfold_accuracy(x, y, k, grid_inner, seed)
        return {**res, "n": len(data)}
    if task == "SST2":
        sst = {s: _senteval_sorted(d, protocol) for s, d in read_sst2(data_dir).items()}
        xs = _encode_unique(encode, *(sst[s].texts for s in ("train", "dev", "test")))
        train, dev, test = ((x, sst[s].labels) for x, s in zip(xs, ("train", "dev", "test"), strict=True))
        sizes = {f"n_{s}": len(sst[s]) for s in ("train", "dev", "test")}
        if se:
            res = split_classifier(train, dev, test, cfg, seed=seed)
        else:
            res = dev_split_accuracy(train, dev, test, grid_inner, seed)
        return {**res, "n": sum(sizes.values()), **sizes}
    if task in ("TREC", "MRPC"):
        if task == "TREC":
            trec = {s: _senteval_sorted(d, protocol) for s, d in read_trec(data_dir).items()}
            x_tr, x_te = _encode_unique(encode, trec["train"].texts, trec["test"].texts)
            y_tr, y_te = trec["train"].labels, trec["test"].labels
        else:
            mrpc = {s: _senteval_sorted(d, protocol) for s, d in read_mrpc(data_dir).items()}
            a_tr, b_tr, a_te, b_te = _encode_unique(
                encode, mrpc["train"].first, mrpc["train"].second, mrpc["test"].first, mrpc["test"].second
            )
            x_tr, x_te = (
                mrpc_features(a_tr, b_tr, mrpc_include_uv),
                mrpc_features(a_te, b_te, mrpc_include_uv),
            )
            y_tr, y_te = mrpc["train"].labels, mrpc["test"].labels
        if se:
            res, pred = se_kfold_then_test(x_tr, y_tr, x_te, y_te, cfg, seed=seed)
        else:
            res, pred = kfold_then_test(x_tr, y_tr, x_te, y_te, k, grid_kfold, seed)
        f1s = {}
        if task == "MRPC":
            f1 = 100 * float(f1_score(y_te, pred))
            f1s = {"f1": round(f1, 2) if se else f1}  # SentEval rounds its scores
        return {**res, **f1s, "n": len(y_tr) + len(y_te), "n_train": len(y_tr), "n_test": len(y_te)}
    raise ValueError(f"unknown transfer task {task!r}; valid: {', '.join(TRANSFER_TASKS)}")


def transfer_accuracy(
    encode: EncodeFn,
    train: LabelledSentences,
    test: LabelledSentences | None = None,
    fast: bool = False,
    seed: int = SENTEVAL_SEED,
) -> dict[str, Any]:
    """SentEval's protocol on any labelled sentences, as it runs its own tasks: one labelled set is MR's
    (``InnerKFoldClassifier``: nested k-fold), a train and a test set TREC's (``KFoldClassifier``: L2 by k-fold
    on train, refit, scored on test); examples in SentEval's order. Percent, SentEval's rounding."""
    cfg = FAST_MODE if fast else TEST_MODE
    train = _senteval_sorted(train, "senteval")
    if test is None:
        (x,) = _encode_unique(encode, train.texts)
        return {**se_inner_kfold(x, train.labels, cfg, seed=seed), "n": len(train)}
    test = _senteval_sorted(test, "senteval")
    x_tr, x_te = _encode_unique(encode, train.texts, test.texts)
    res, _ = se_kfold_then_test(x_tr, train.labels, x_te, test.labels, cfg, seed=seed)
    return {**res, "n_train": len(train), "n_test": len(test)}


def evaluate_transfer(
    encode: EncodeFn,
    data_dir: str | Path | None,
    tasks: Sequence[str] = TRANSFER_TASKS,
    fast: bool = False,
    seed: int | None = None,
    mrpc_include_uv: bool | None = None,
    protocol: str = "senteval",
    on_done: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the transfer ``tasks`` (layout in the module docstring; percent); "avg" = mean accuracy.
    ``on_done(task)`` is called after each task (progress).

    ``protocol``: "senteval" (default; SentEval's PyTorch classifier, see
    :mod:`sentcl.evaluation.senteval_classifier`; ``fast`` = SimCSE's fasttest settings) or "sklearn".
    ``seed`` and ``mrpc_include_uv`` default to the protocol's own: 1111 and [|u−v|, u∗v] for senteval,
    0 and [u, v, |u−v|, u∗v] for sklearn.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown transfer protocol {protocol!r}; valid: {', '.join(PROTOCOLS)}")
    unknown = [t for t in tasks if t not in TRANSFER_TASKS]
    if unknown:
        raise ValueError(f"unknown transfer task(s) {', '.join(unknown)}; valid: {', '.join(TRANSFER_TASKS)}")
    root = resolve_data_dir(data_dir)
    seed = (SENTEVAL_SEED if protocol == "senteval" else 0) if seed is None else seed
    include_uv = (protocol == "sklearn") if mrpc_include_uv is None else mrpc_include_uv
    result: dict[str, Any] = {}
    for task in tasks:
        result[task] = {
            **_run_task(task, encode, root, fast, protocol, seed, include_uv),
            "protocol": protocol,
        }
        if on_done is not None:
            on_done(task)
    result["avg"] = float(np.mean([result[t]["acc"] for t in tasks])) if tasks else math.nan
    return result


def format_transfer_table(results_by_model: Mapping[str, Mapping[str, Any]]) -> str:
    """Markdown table: a row per model, a column per task (accuracy) plus Avg., and MRPC F1 when present."""
    tasks = [t for t in TRANSFER_TASKS if any(t in res for res in results_by_model.values())]
    with_f1 = any("f1" in res.get("MRPC", {}) for res in results_by_model.values())
    header = ["Model", *tasks, "Avg."] + (["MRPC F1"] if with_f1 else [])
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for model, res in results_by_model.items():
        cells = [f"{float(res[t]['acc']):.2f}" if t in res else "-" for t in tasks]
        cells.append(f"{float(res['avg']):.2f}" if "avg" in res else "-")
        if with_f1:
            cells.append(f"{float(res['MRPC']['f1']):.2f}" if "f1" in res.get("MRPC", {}) else "-")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
