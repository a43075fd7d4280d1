"""A hand-written reference of SentEval's PyTorch classifier and validation (tests and bench only).

Written from SentEval's source as its documentation of the algorithm (tools/classifier.py,
tools/validation.py, the task files): ``nn.Linear`` + ``nn.CrossEntropyLoss`` + ``torch.optim`` with
autograd, the global numpy / torch seeds set whenever a classifier is built, the early-stopping loop with its
never-reset counter, the tasks' own sort before embedding. It shares no code with
sentcl.evaluation.senteval_classifier (which writes the gradient and the optimisers out, uses private RNGs).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
from sklearn.model_selection import StratifiedKFold


class ReferenceMLP:
    """SentEval's PyTorchClassifier/MLP with nhid=0, as its source describes it (CPU)."""

    def __init__(self, dim: int, n_classes: int, l2reg: float, cfg: Any, seed: int) -> None:
        np.random.seed(seed)
        torch.manual_seed(seed)
        self.cfg, self.nepoch = cfg, 0
        self.model = torch.nn.Sequential(torch.nn.Linear(dim, n_classes))
        self.loss_fn = torch.nn.CrossEntropyLoss()
        optim = {"adam": torch.optim.Adam, "rmsprop": torch.optim.RMSprop}[cfg.optim]
        self.optimizer = optim(self.model.parameters())
        self.optimizer.param_groups[0]["weight_decay"] = l2reg

    def fit(self, x, y, validation_data=None, validation_split=None) -> float:  # noqa: ANN001
        if validation_data is not None:
            tx, ty, dx, dy = x, y, *validation_data
        else:
            perm = np.random.permutation(len(x))
            cut = int(validation_split * len(x))
            tx, ty, dx, dy = x[perm[cut:]], y[perm[cut:]], x[perm[:cut]], y[perm[:cut]]
        tx, ty = torch.FloatTensor(tx), torch.LongTensor(ty)
        best, best_model, stop, count = -1.0, None, False, 0
        while not stop and self.nepoch <= self.cfg.max_epoch:
            for _ in range(self.cfg.epoch_size):
                perm = np.random.permutation(len(tx))
                for i in range(0, len(tx), self.cfg.batch_size):
                    idx = torch.LongTensor(perm[i : i + self.cfg.batch_size])
                    loss = self.loss_fn(self.model(tx.index_select(0, idx)), ty.index_select(0, idx))
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
            self.nepoch += self.cfg.epoch_size
            acc = self.score(dx, dy)
            if acc > best:
                best, best_model = acc, copy.deepcopy(self.model)
            else:
                if count >= self.cfg.tenacity:
                    stop = True
                count += 1
        self.model = best_model
        return best

    def score(self, x, y) -> float:  # noqa: ANN001
        with torch.no_grad():
            pred = self.model(torch.FloatTensor(x)).argmax(dim=1).numpy()
        return float(np.mean(pred == np.asarray(y)))


def reference_inner_kfold(x, y, cfg, grid, seed, n_classes=2):  # noqa: ANN001, ANN201
    """InnerKFoldClassifier: outer/inner StratifiedKFold(shuffle, 1111), rounded scores, first best."""
    skf = StratifiedKFold(n_splits=cfg.kfold, shuffle=True, random_state=seed)
    tests, devs, regs = [], [], []
    for tr, te in skf.split(x, y):
        scores = []
        for reg in grid:
            accs = []
            for itr, ite in skf.split(x[tr], y[tr]):
                clf = ReferenceMLP(x.shape[1], n_classes, reg, cfg, seed)
                clf.fit(x[tr][itr], y[tr][itr], validation_data=(x[tr][ite], y[tr][ite]))
                accs.append(clf.score(x[tr][ite], y[tr][ite]))
            scores.append(round(100 * np.mean(accs), 2))
        reg = grid[int(np.argmax(scores))]
        clf = ReferenceMLP(x.shape[1], n_classes, reg, cfg, seed)
        clf.fit(x[tr], y[tr], validation_split=0.05)
        tests.append(round(100 * clf.score(x[te], y[te]), 2))
        devs.append(max(scores))
        regs.append(reg)
    return round(float(np.mean(tests)), 2), round(float(np.mean(devs)), 2), regs


def reference_kfold(x_tr, y_tr, x_te, y_te, cfg, grid, seed, n_classes):  # noqa: ANN001, ANN201
    """KFoldClassifier: (dev acc, test acc, chosen L2, test predictions), SentEval's rounding."""
    skf = StratifiedKFold(n_splits=cfg.kfold, shuffle=True, random_state=seed)
    scores = []
    for reg in grid:
        accs = []
        for tr, te in skf.split(x_tr, y_tr):
            clf = ReferenceMLP(x_tr.shape[1], n_classes, reg, cfg, seed)
            clf.fit(x_tr[tr], y_tr[tr], validation_data=(x_tr[te], y_tr[te]))
            accs.append(clf.score(x_tr[te], y_tr[te]))
        scores.append(round(100 * np.mean(accs), 2))
    reg = grid[int(np.argmax(scores))]
    clf = ReferenceMLP(x_tr.shape[1], n_classes, reg, cfg, seed)
    clf.fit(x_tr, y_tr, validation_split=0.05)
    with torch.no_grad():
        pred = clf.model(torch.FloatTensor(x_te)).argmax(dim=1).numpy()
    return max(scores), round(100 * float(np.mean(pred == y_te)), 2), reg, pred


def senteval_sorted(*columns):  # noqa: ANN002, ANN201
    """The tasks' sort before embedding: by token count of the text column(s), then label (the last column)."""
    rows = sorted(zip(*columns, strict=True), key=lambda z: (*(len(t.split()) for t in z[:-1]), z[-1]))
    return [list(c) for c in zip(*rows, strict=True)]


def reference_split(train, dev, test, cfg, grid, seed, n_classes):  # noqa: ANN001, ANN201
    """SplitClassifier: (dev acc, test acc, chosen L2): each L2 early-stopped on dev, the best refit."""
    scores = []
    for reg in grid:
        clf = ReferenceMLP(train[0].shape[1], n_classes, reg, cfg, seed)
        clf.fit(*train, validation_data=dev)
        scores.append(round(100 * clf.score(*dev), 2))
    reg = grid[int(np.argmax(scores))]
    clf = ReferenceMLP(train[0].shape[1], n_classes, reg, cfg, seed)
    clf.fit(*train, validation_data=dev)
    return max(scores), round(100 * clf.score(*test), 2), reg


def reference_avg_batcher(model_dir: str, batch_size: int = 64):  # noqa: ANN201
    """SimCSE evaluation.py's batcher for ``--pooler avg``, written from its description: the Hugging Face
    backbone (``AutoModel``) of ``model_dir``, sentences in the order given, padded per batch, the mean of the
    last layer over the attention mask, nothing normalised. Shares no code with sentcl's encoder."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()

    def encode(sentences: list[str]) -> np.ndarray:
        out = []
        with torch.no_grad():
            for i in range(0, len(sentences), batch_size):
                batch = tokenizer(sentences[i : i + batch_size], padding=True, return_tensors="pt")
                hidden = model(**batch).last_hidden_state  # (B, L, H)
                mask = batch["attention_mask"].unsqueeze(-1).float()  # (B, L, 1)
                out.append(((hidden * mask).sum(1) / mask.sum(1)).numpy())  # (B, H)
        return np.concatenate(out) if out else np.zeros((0, model.config.hidden_size), dtype=np.float32)

    return encode
