"""SentEval's transfer protocol, as SimCSE's ``evaluation.py`` runs it: a PyTorch logistic regression.

Written from a reading of facebookresearch/SentEval (``senteval/tools/classifier.py`` ``PyTorchClassifier`` /
``MLP``, ``senteval/tools/validation.py``, ``senteval/engine.py``, the task files ``binary.py``, ``sst.py``,
``trec.py``, ``mrpc.py``) and princeton-nlp/SimCSE ``evaluation.py``; no code taken from them.

Classifier (``MLP`` with ``nhid=0``): one linear layer x -> W x + b, cross-entropy with mean reduction
(SentEval sets ``loss_fn.size_average = False`` after construction, which PyTorch >= 0.4 ignores), the
optimiser's own ``weight_decay = l2reg`` on W and b (the "L2" of the grid), PyTorch's default
hyper-parameters of the optimiser (Adam lr 1e-3; RMSprop lr 1e-2, alpha 0.99). ``nn.Linear``'s default
initialisation: W and b uniform in ±1/sqrt(n_features), drawn right after ``torch.manual_seed(seed)``.
Training: passes over shuffled mini-batches, ``epoch_size`` passes between two accuracy checks on the
validation data; the best-accuracy weights are kept; training stops after ``tenacity + 1`` checks without
a new best (SentEval's counter counts every such check, it is never reset), or past ``max_epoch`` = 200
passes. Every shuffle is ``numpy.random.permutation`` after ``numpy.random.seed(seed)`` (we use a private
``RandomState(seed)``: the same stream, no global state touched).

Settings (:data:`TEST_MODE`, :data:`FAST_MODE`: SimCSE ``evaluation.py`` ``--mode test`` / ``--mode fasttest``):

=============  ==========  ==========  ================================================================
setting        test        fast        meaning
=============  ==========  ==========  ================================================================
optim          adam        rmsprop     optimiser (PyTorch defaults)
batch_size     64          128         mini-batch of the classifier
tenacity       5           3           checks without improvement tolerated (see above)
epoch_size     4           2           passes over the training data between two checks
kfold          10          5           folds of every cross-validation
=============  ==========  ==========  ================================================================

Both modes: L2 grid 1e-5, 1e-4, 1e-3, 1e-2 (``validation.py``: ``10**t for t in range(-5, -1)``), seed 1111
(``engine.py``'s default), hold-out 5% for early stopping of the final fits (``validation_split=0.05``).
Scores are rounded as SentEval rounds them (``round(100 * acc, 2)``) and the grid's first best wins.

Validation schemes (``validation.py``):

* :func:`inner_kfold` (MR, CR, SUBJ, MPQA; ``InnerKFoldClassifier``): outer stratified k-fold
  (shuffled, seed 1111); in each outer fold every L2 value is scored by an inner stratified k-fold on the
  outer training part (each inner fit early-stops on its inner test fold, whose best accuracy is its score);
  the chosen L2 is refit on the whole outer training part (early stopping on a random 5%), scored on the
  outer test fold. acc = mean of the outer test accuracies.
* :func:`kfold_then_test` (TREC, MRPC; ``KFoldClassifier``): L2 chosen by k-fold CV on train (same
  early stopping on each held-out fold), refit on train (5% hold-out), scored on test.
* :func:`split_classifier` (SST-2; ``SplitClassifier``): each L2 trained on train, early-stopped and scored
  on dev; the best is scored on test (SentEval refits it with the same seed: the same model).

Every cross-validation and split trains its L2 grid side by side (one ``LogisticRegression`` over the grid:
the values share the data and, seeded alike, the shuffles), each model bitwise as it would end alone; the
classifier's time on CR, TREC and MRPC fell from 14.1 s to 7.7 s (``python -m bench.transfer_grid --tasks
CR,TREC,MRPC --rounds 2``: bench/results/transfer_grid.json).

The tasks feed the classifier their examples sorted as SentEval sorts them to reduce padding
(:func:`senteval_order`); the shuffled folds depend on that order.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from sklearn.model_selection import StratifiedKFold

SEED = 1111
L2_GRID = (1e-5, 1e-4, 1e-3, 1e-2)
VALIDATION_SPLIT = 0.05


@dataclass(frozen=True)
class ClassifierConfig:
    """SentEval's ``params['classifier']`` (nhid 0) plus ``params['kfold']``."""

    optim: Literal["adam", "rmsprop"]
    batch_size: int
    tenacity: int
    epoch_size: int
    kfold: int
    max_epoch: int = 200


TEST_MODE = ClassifierConfig(optim="adam", batch_size=64, tenacity=5, epoch_size=4, kfold=10)
FAST_MODE = ClassifierConfig(optim="rmsprop", batch_size=128, tenacity=3, epoch_size=2, kfold=5)


@contextmanager
def _one_thread() -> Iterator[None]:
    """The fits are tiny matmuls: one thread, as the scikit-learn protocol uses (restored afterwards)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class _Adam:
    """``torch.optim.Adam(weight_decay=l2reg)`` with its defaults, written out for one tensor (less per-step overhead)."""

    lr, beta1, beta2, eps = 1e-3, 0.9, 0.999, 1e-8

    def __init__(self, param: torch.Tensor, l2reg: torch.Tensor) -> None:
        self.param, self.l2reg, self.t = param, l2reg, 0
        self.m, self.v = torch.zeros_like(param), torch.zeros_like(param)

    def step(self, grad: torch.Tensor) -> None:
        self.t += 1
        grad = torch.addcmul(grad, self.param, self.l2reg)  # coupled L2, as torch.optim's weight_decay
        self.m.lerp_(grad, 1 - self.beta1)
        self.v.mul_(self.beta2).addcmul_(grad, grad, value=1 - self.beta2)
        step_size = self.lr / (1 - self.beta1**self.t)
        denom = (self.v.sqrt() / math.sqrt(1 - self.beta2**self.t)).add_(self.eps)
        self.param.addcdiv_(self.m, denom, value=-step_size)


class _RMSprop:
    """``torch.optim.RMSprop(weight_decay=l2reg)`` with its defaults (no momentum, not centred), written out."""

    lr, alpha, eps = 1e-2, 0.99, 1e-8

    def __init__(self, param: torch.Tensor, l2reg: torch.Tensor) -> None:
        self.param, self.l2reg = param, l2reg
        self.square_avg = torch.zeros_like(param)

    def step(self, grad: torch.Tensor) -> None:
        grad = torch.addcmul(grad, self.param, self.l2reg)
        self.square_avg.mul_(self.alpha).addcmul_(grad, grad, value=1 - self.alpha)
        self.param.addcdiv_(grad, self.square_avg.sqrt().add_(self.eps), value=-self.lr)


OPTIMIZERS = {"adam": _Adam, "rmsprop": _RMSprop}


class LogisticRegression:
    """SentEval's ``MLP(nhid=0)``: softmax regression trained by mini-batches with early stopping.

    W and b are held as one matrix ``theta = [W | b]`` (C, D+1) against inputs [x, 1]: the same model and
    the same updates (the optimisers act element-wise and the L2 covers W and b alike).

    ``l2reg`` may be a sequence: then one model per value is trained side by side, ``theta`` (G, C, D+1), on
    the same mini-batches (SentEval builds each with the same seed, so they draw the same shuffles), each
    with its own early stopping. Every per-model product is the one a lone model computes (a batched matmul
    of the same shapes; the L2 by ``addcmul``, bitwise ``add(alpha=)``), so each model ends where it would
    alone: the grid costs one model's Python overhead instead of G.
    """

    def __init__(
        self,
        n_features: int,
        n_classes: int,
        l2reg: float | Sequence[float],
        config: ClassifierConfig,
        seed: int = SEED,
    ) -> None:
        self.config = config
        self.grid = isinstance(l2reg, Sequence)
        regs = list(l2reg) if isinstance(l2reg, Sequence) else [l2reg]
        self.rng = np.random.RandomState(seed)  # numpy.random.seed(seed) in SentEval
        gen = torch.Generator().manual_seed(seed)  # torch.manual_seed(seed), then nn.Linear's init
        bound = 1.0 / math.sqrt(n_features)
        weight = torch.empty(n_classes, n_features).uniform_(-bound, bound, generator=gen)  # (C, D)
        bias = torch.empty(n_classes).uniform_(-bound, bound, generator=gen)  # (C,)
        one = torch.cat([weight, bias[:, None]], dim=1)  # (C, D+1)
        self.theta = one.expand(len(regs), *one.shape).clone()  # (G, C, D+1): every model starts alike
        l2 = torch.tensor(regs, dtype=torch.float32).view(-1, 1, 1)  # (G, 1, 1)
        self.optimizer = OPTIMIZERS[config.optim](self.theta, l2)
        self.n_epoch = 0
        self.stopped_at = [0] * len(regs)  # passes each model had when it stopped

    @property
    def weight(self) -> torch.Tensor:
        return self.theta[..., :-1] if self.grid else self.theta[0, :, :-1]

    @property
    def bias(self) -> torch.Tensor:
        return self.theta[..., -1] if self.grid else self.theta[0, :, -1]

    def fit(
        self,
        x: np.ndarray,
        y: np.ndarray,
        validation_data: tuple[np.ndarray, np.ndarray] | None = None,
        validation_split: float | None = None,
    ) -> Any:
        """Train with early stopping on ``validation_data`` (or a random ``validation_split`` of x).

        Returns the best validation accuracy (a fraction; a list of them, one a model, for a grid); the
        weights are those that reached it.
        """
        if validation_data is not None:
            x_dev, y_dev = validation_data
        else:
            if not validation_split:
                raise ValueError("need validation_data or a validation_split")
            perm = self.rng.permutation(len(x))
            cut = int(validation_split * len(x))
            x, y, x_dev, y_dev = x[perm[cut:]], y[perm[cut:]], x[perm[:cut]], y[perm[:cut]]
        xt, yd = _with_ones(x), torch.as_tensor(np.asarray(y_dev), dtype=torch.int64)
        xd, n_classes = _with_ones(x_dev), self.theta.shape[1]
        if len(xt) == 0 or len(yd) == 0:
            raise ValueError(f"need training and validation examples, got {len(xt)} and {len(yd)}")
        yt = torch.eye(n_classes)[torch.as_tensor(np.asarray(y), dtype=torch.int64)]  # one-hot (N, C)
        models = len(self.theta)
        best_acc, best, misses = [-1.0] * models, self.theta.clone(), [0] * models
        running = set(range(models))
        with _one_thread():
            while running and self.n_epoch <= self.config.max_epoch:
                self._train_passes(xt, yt)
                hits = (torch.argmax(xd @ self.theta.transpose(1, 2), dim=2) == yd).sum(dim=1)  # (G,)
                for g in sorted(running):
                    acc = float(hits[g]) / len(yd)
                    if acc > best_acc[g]:
                        best_acc[g] = acc
                        best[g] = self.theta[g]
                    elif misses[g] >= self.config.tenacity:
                        running.discard(g)
                        self.stopped_at[g] = self.n_epoch
                    else:
                        misses[g] += 1
        for g in running:
            self.stopped_at[g] = self.n_epoch
        self.theta.copy_(best)
        return best_acc if self.grid else best_acc[0]

    def _train_passes(self, x1: torch.Tensor, y_onehot: torch.Tensor) -> None:
        """``epoch_size`` shuffled passes over [x, 1]; the gradient of mean cross-entropy written out."""
        n, bs = len(x1), self.config.batch_size
        for _ in range(self.config.epoch_size):
            perm = torch.from_numpy(self.rng.permutation(n))
            for start in range(0, n, bs):
                idx = perm[start : start + bs]
                xb = x1.index_select(0, idx)  # (B, D+1)
                p = torch.softmax(xb @ self.theta.transpose(1, 2), dim=2)  # (G, B, C)
                p -= y_onehot.index_select(0, idx)  # B · dL/dlogits, (G, B, C)
                self.optimizer.step(p.transpose(1, 2) @ xb / len(idx))  # (G, C, D+1)
        self.n_epoch += self.config.epoch_size

    def logits(self, x: np.ndarray | torch.Tensor) -> torch.Tensor:
        """(N, C); (G, N, C) for a grid."""
        with torch.no_grad():
            out = _tensor(x) @ self.weight.transpose(-1, -2) + self.bias.unsqueeze(-2)  # (G, N, C) or (N, C)
        return out

    def predict(self, x: np.ndarray | torch.Tensor) -> np.ndarray:
        return self.logits(x).argmax(dim=-1).numpy()

    def score(self, x: np.ndarray, y: np.ndarray) -> Any:
        """Accuracy (a fraction; one a model for a grid) on (x, y)."""
        right = self.predict(x) == np.asarray(y)
        return [float(r) for r in right.mean(axis=-1)] if self.grid else float(np.mean(right))


def _tensor(x: np.ndarray | torch.Tensor) -> torch.Tensor:
    """float32, as SentEval's ``torch.FloatTensor(X)``."""
    return torch.as_tensor(np.asarray(x), dtype=torch.float32)


def _with_ones(x: np.ndarray) -> torch.Tensor:
    """[x, 1] in float32: (N, D+1)."""
    x = _tensor(x)
    return torch.cat([x, torch.ones(len(x), 1)], dim=1)  # (N, D+1)


def _pct(fraction: float) -> float:
    return round(100 * fraction, 2)


def _folds(y: np.ndarray, k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    return list(skf.split(np.zeros(len(y)), y))


def _n_classes(*labels: np.ndarray) -> int:
    return int(max(int(np.max(y)) for y in labels)) + 1


def _select(scores: Sequence[float], grid: Sequence[float]) -> tuple[float, float]:
    """First L2 of the grid with the highest (rounded) score: (l2reg, score)."""
    best = int(np.argmax(scores))
    return grid[best], scores[best]


def cv_scores(
    x: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    config: ClassifierConfig,
    grid: Sequence[float] = L2_GRID,
    seed: int = SEED,
) -> list[float]:
    """Per L2 value: ``round(100 · mean held-out accuracy, 2)`` over the stratified k-fold of (x, y). The grid's
    models of one fold train side by side (``LogisticRegression`` with a sequence of L2 values)."""
    accs = []  # (folds, grid)
    for train, test in _folds(y, config.kfold, seed):
        clf = LogisticRegression(x.shape[1], n_classes, list(grid), config, seed)
        accs.append(clf.fit(x[train], y[train], validation_data=(x[test], y[test])))
    return [_pct(float(np.mean([fold[j] for fold in accs]))) for j in range(len(grid))]


def inner_kfold(
    x: np.ndarray, y: np.ndarray, config: ClassifierConfig, grid: Sequence[float] = L2_GRID, seed: int = SEED
) -> dict[str, Any]:
    """``InnerKFoldClassifier`` (MR, CR, SUBJ, MPQA): see the module docstring. Percent, SentEval's rounding."""
    n_classes = _n_classes(y)
    test_acc, dev_acc, chosen = [], [], []
    for train, test in _folds(y, config.kfold, seed):
        reg, dev = _select(cv_scores(x[train], y[train], n_classes, config, grid, seed), grid)
        clf = LogisticRegression(x.shape[1], n_classes, reg, config, seed)
        clf.fit(x[train], y[train], validation_split=VALIDATION_SPLIT)
        test_acc.append(_pct(clf.score(x[test], y[test])))
        dev_acc.append(dev)
        chosen.append(reg)
    return {
        "acc": round(float(np.mean(test_acc)), 2),
        "dev_acc": round(float(np.mean(dev_acc)), 2),
        "l2reg": chosen,
    }


def kfold_then_test(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    y_test: np.ndarray,
    config: ClassifierConfig,
    grid: Sequence[float] = L2_GRID,
    seed: int = SEED,
) -> tuple[dict[str, Any], np.ndarray]:
    """``KFoldClassifier`` (TREC, MRPC): L2 by k-fold CV on train, refit, score test; also the predictions."""
    n_classes = _n_classes(y_train, y_test)
    reg, dev = _select(cv_scores(x_train, y_train, n_classes, config, grid, seed), grid)
    clf = LogisticRegression(x_train.shape[1], n_classes, reg, config, seed)
    clf.fit(x_train, y_train, validation_split=VALIDATION_SPLIT)
    pred = clf.predict(x_test)
    return {"acc": _pct(float(np.mean(pred == y_test))), "dev_acc": dev, "l2reg": reg}, pred


def split_classifier(
    train: tuple[np.ndarray, np.ndarray],
    dev: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray],
    config: ClassifierConfig,
    grid: Sequence[float] = L2_GRID,
    seed: int = SEED,
) -> dict[str, Any]:
    """``SplitClassifier`` (SST-2): each L2 early-stopped and scored on dev; the best one scored on test."""
    n_classes = _n_classes(train[1], dev[1], test[1])
    clf = LogisticRegression(train[0].shape[1], n_classes, list(grid), config, seed)
    scores = [_pct(acc) for acc in clf.fit(*train, validation_data=dev)]
    reg, dev_acc = _select(scores, grid)
    return {"acc": _pct(clf.score(*test)[list(grid).index(reg)]), "dev_acc": dev_acc, "l2reg": reg}


def senteval_order(key_columns: Sequence[Sequence[Any]]) -> np.ndarray:
    """Indices that sort the examples as SentEval does before embedding them (a stable sort).

    ``key_columns`` are parallel columns of the sort key, e.g. (token counts, labels) for the single-sentence
    tasks, (token counts of A, of B, labels) for MRPC.
    """
    rows = list(zip(*key_columns, strict=True))
    return np.array(sorted(range(len(rows)), key=rows.__getitem__), dtype=np.int64)
