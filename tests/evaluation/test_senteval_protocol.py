"""SentEval's transfer protocol (evaluation.senteval_classifier) against a hand-written reference of SentEval.

The reference (senteval_reference.py, beside this file) shares no code with the module under test.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from senteval_reference import ReferenceMLP, reference_inner_kfold
from sklearn.model_selection import StratifiedKFold

from sentcl.evaluation import transfer
from sentcl.evaluation.senteval_classifier import (
    FAST_MODE,
    L2_GRID,
    SEED,
    TEST_MODE,
    ClassifierConfig,
    LogisticRegression,
    _select,
    inner_kfold,
    kfold_then_test,
    senteval_order,
    split_classifier,
)
from sentcl.evaluation.transfer import evaluate_transfer


def overlapping(n: int, dim: int, seed: int, shift: float = 0.6) -> tuple[np.ndarray, np.ndarray]:
    """Two Gaussian classes whose means differ by ``shift`` along each axis: not separable."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    x = rng.normal(size=(n, dim)) + shift * y[:, None]
    return x.astype(np.float32), y


# ---------------------------------------------------------------------- the classifier


@pytest.mark.parametrize("cfg", [TEST_MODE, FAST_MODE], ids=["test-adam", "fast-rmsprop"])
@pytest.mark.parametrize("separable", [False, True])
def test_classifier_matches_reference(cfg: ClassifierConfig, separable: bool) -> None:
    x, y = overlapping(300, 6, seed=0, shift=4.0 if separable else 0.6)
    with torch.random.fork_rng():
        ref = ReferenceMLP(6, 2, 1e-3, cfg, SEED)
        ref_acc = ref.fit(x[:200], y[:200], validation_data=(x[200:], y[200:]))
        ref2 = ReferenceMLP(6, 2, 1e-3, cfg, SEED)
        ref2_acc = ref2.fit(x, y, validation_split=0.05)
    ours = LogisticRegression(6, 2, 1e-3, cfg, SEED)
    assert ours.fit(x[:200], y[:200], validation_data=(x[200:], y[200:])) == ref_acc
    assert ours.n_epoch == ref.nepoch  # the same early-stopping decisions
    lin = ref.model[0]
    np.testing.assert_allclose(ours.weight.numpy(), lin.weight.detach().numpy(), atol=2e-5)
    np.testing.assert_allclose(ours.bias.numpy(), lin.bias.detach().numpy(), atol=2e-5)
    ours2 = LogisticRegression(6, 2, 1e-3, cfg, SEED)
    assert ours2.fit(x, y, validation_split=0.05) == ref2_acc
    assert ours2.n_epoch == ref2.nepoch
    assert ours2.score(x, y) == ref2.score(x, y)
    if separable:
        assert ref_acc > 0.9
    else:
        assert 0.55 < ref_acc < 0.95


def test_initialisation_is_nn_linear_under_the_seed() -> None:
    with torch.random.fork_rng():
        torch.manual_seed(SEED)
        lin = torch.nn.Linear(7, 3)
    ours = LogisticRegression(7, 3, 0.0, FAST_MODE, SEED)
    assert torch.equal(ours.weight, lin.weight.detach()) and torch.equal(ours.bias, lin.bias.detach())
    other = LogisticRegression(7, 3, 0.0, FAST_MODE, seed=SEED + 1)
    assert not torch.equal(other.weight, ours.weight)


def test_multiclass_and_errors() -> None:
    rng = np.random.default_rng(1)
    y = np.arange(240) % 3
    x = (rng.normal(size=(240, 4)) + 3.0 * np.eye(4)[y]).astype(np.float32)
    with torch.random.fork_rng():
        ref = ReferenceMLP(4, 3, 1e-4, FAST_MODE, SEED)
        ref_acc = ref.fit(x[:180], y[:180], validation_data=(x[180:], y[180:]))
    ours = LogisticRegression(4, 3, 1e-4, FAST_MODE, SEED)
    assert ours.fit(x[:180], y[:180], validation_data=(x[180:], y[180:])) == ref_acc > 0.9
    with pytest.raises(ValueError, match="validation"):
        ours.fit(x, y)
    with pytest.raises(ValueError, match="validation examples"):
        ours.fit(x[:10], y[:10], validation_split=0.05)  # int(0.05 * 10) = 0 held out


# ---------------------------------------------------------------------- settings, splits, grid selection


def test_settings_are_simcse_and_senteval() -> None:
    # SimCSE evaluation.py --mode test / fasttest; SentEval validation.py's pytorch grid; engine.py's seed
    assert (TEST_MODE.optim, TEST_MODE.batch_size, TEST_MODE.tenacity, TEST_MODE.epoch_size) == (
        "adam",
        64,
        5,
        4,
    )
    assert TEST_MODE.kfold == 10 and FAST_MODE.kfold == 5
    assert (FAST_MODE.optim, FAST_MODE.batch_size, FAST_MODE.tenacity, FAST_MODE.epoch_size) == (
        "rmsprop",
        128,
        3,
        2,
    )
    assert TEST_MODE.max_epoch == FAST_MODE.max_epoch == 200
    assert L2_GRID == (1e-5, 1e-4, 1e-3, 1e-2) and SEED == 1111


def test_inner_kfold_matches_reference_selection() -> None:
    x, y = overlapping(60, 5, seed=2, shift=0.8)
    cfg = ClassifierConfig(optim="rmsprop", batch_size=16, tenacity=3, epoch_size=2, kfold=3)
    grid = (1e-5, 1e-1, 1.0)  # a wide grid, so that the choice matters
    with torch.random.fork_rng():
        ref_acc, ref_dev, ref_regs = reference_inner_kfold(x, y, cfg, grid, SEED)
    res = inner_kfold(x, y, cfg, grid=grid, seed=SEED)
    assert (res["acc"], res["dev_acc"], res["l2reg"]) == (ref_acc, ref_dev, ref_regs)
    assert res == inner_kfold(x, y, cfg, grid=grid, seed=SEED)  # deterministic under the seed


def test_kfold_then_test_and_split_match_reference() -> None:
    x, y = overlapping(150, 5, seed=3, shift=0.8)
    cfg = ClassifierConfig(optim="adam", batch_size=16, tenacity=2, epoch_size=1, kfold=3)
    grid = (1e-4, 0.5)
    res, pred = kfold_then_test(x[:100], y[:100], x[100:], y[100:], cfg, grid=grid, seed=SEED)
    with torch.random.fork_rng():
        skf = StratifiedKFold(n_splits=3, shuffle=True, random_state=SEED)
        scores = []
        for reg in grid:
            accs = []
            for tr, te in skf.split(x[:100], y[:100]):
                clf = ReferenceMLP(5, 2, reg, cfg, SEED)
                accs.append(clf.fit(x[tr], y[tr], validation_data=(x[te], y[te])))
            scores.append(round(100 * np.mean(accs), 2))
        reg = grid[int(np.argmax(scores))]
        final = ReferenceMLP(5, 2, reg, cfg, SEED)
        final.fit(x[:100], y[:100], validation_split=0.05)
        ref_test = round(100 * final.score(x[100:], y[100:]), 2)
        split_ref = []
        for reg_ in grid:
            clf = ReferenceMLP(5, 2, reg_, cfg, SEED)
            split_ref.append(round(100 * clf.fit(x[:80], y[:80], validation_data=(x[80:100], y[80:100])), 2))
        best = ReferenceMLP(5, 2, grid[int(np.argmax(split_ref))], cfg, SEED)
        best.fit(x[:80], y[:80], validation_data=(x[80:100], y[80:100]))
        split_test = round(100 * best.score(x[100:], y[100:]), 2)
    assert (res["dev_acc"], res["l2reg"], res["acc"]) == (max(scores), reg, ref_test)
    assert res["acc"] == round(100 * float(np.mean(pred == y[100:])), 2)
    split = split_classifier((x[:80], y[:80]), (x[80:100], y[80:100]), (x[100:], y[100:]), cfg, grid, SEED)
    assert (split["dev_acc"], split["acc"]) == (max(split_ref), split_test)


def test_grid_ties_go_to_the_first_value() -> None:
    assert _select([80.0, 81.5, 81.5, 79.0], L2_GRID) == (1e-4, 81.5)  # np.argmax: the first best


def test_senteval_order_is_a_stable_sort_by_length_then_label() -> None:
    texts = ["a b c", "x", "y z", "p", "q r", "s"]
    labels = [0, 1, 0, 0, 1, 1]
    order = senteval_order([[len(t.split()) for t in texts], labels])
    assert order.tolist() == [3, 1, 5, 2, 4, 0]  # "p"(0), "x"(1), "s"(1), "y z"(0), "q r"(1), "a b c"
    expected = sorted(zip(texts, labels, strict=True), key=lambda z: (len(z[0].split()), z[1]))
    assert [texts[i] for i in order] == [t for t, _ in expected]


# ---------------------------------------------------------------------- MRPC features, through evaluate_transfer


def test_mrpc_uses_senteval_features(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mrpc = tmp_path / "senteval" / "MRPC"
    mrpc.mkdir(parents=True)
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    for name, n in [("msr_paraphrase_train.txt", 24), ("msr_paraphrase_test.txt", 8)]:
        rows = [f"{i % 2}\t{i}\t{i}\t{'w ' * (i % 4)}a{i}\tb{i} {'v ' * (i % 3)}" for i in range(n)]
        (mrpc / name).write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    table = {}

    def encode(texts: list[str]) -> np.ndarray:
        rng = np.random.default_rng(len(table))
        out = rng.normal(size=(len(texts), 3))
        table.update({t: row for t, row in zip(texts, out, strict=True)})
        return out

    seen = {}

    def spy(x_tr, y_tr, x_te, y_te, cfg, seed):  # noqa: ANN001, ANN202
        seen.update(x_tr=x_tr, y_tr=y_tr, cfg=cfg, seed=seed)
        return {"acc": 50.0, "dev_acc": 50.0, "l2reg": 1e-5}, np.zeros(len(y_te), dtype=np.int64)

    monkeypatch.setattr(transfer, "se_kfold_then_test", spy)
    res = evaluate_transfer(encode, tmp_path, tasks=("MRPC",), fast=True)
    assert res["MRPC"]["protocol"] == "senteval" and seen["cfg"] == FAST_MODE and seen["seed"] == 1111
    lines = (mrpc / "msr_paraphrase_train.txt").read_text(encoding="utf-8").splitlines()[1:]
    rows = [line.split("\t") for line in lines]
    # SentEval's order: by token count of A, then of B, then label (stable)
    rows.sort(key=lambda r: (len(r[3].split()), len(r[4].split()), int(r[0])))
    u = np.array([table[" ".join(r[3].split())] for r in rows])
    v = np.array([table[" ".join(r[4].split())] for r in rows])
    np.testing.assert_allclose(seen["x_tr"], np.concatenate([np.abs(u - v), u * v], axis=1))  # (N, 2D)
    assert seen["y_tr"].tolist() == [int(r[0]) for r in rows]


def test_unknown_protocol() -> None:
    with pytest.raises(ValueError, match="unknown transfer protocol 'libsvm'"):
        evaluate_transfer(lambda t: np.zeros((len(t), 2)), None, tasks=("MR",), protocol="libsvm")


# ---------------------------------------------------------------------- the option: API, config, CLI


def test_protocol_option_reaches_the_evaluator(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sentcl.cli import main
    from sentcl.config import ConfigError, EvalConfig
    from sentcl.evaluation import runner

    calls: list[dict] = []

    def spy(encode, data_dir, fast=False, protocol="?", tasks=None, on_done=None):  # noqa: ANN001, ANN202, ARG001
        calls.append({"fast": fast, "protocol": protocol})
        return {"MR": {"acc": 50.0, "protocol": protocol}, "avg": 50.0}

    monkeypatch.setattr(runner, "evaluate_transfer", spy)
    runner.evaluate(lambda t: np.zeros((len(t), 2)), tmp_path, ["transfer_fast", "transfer"])
    runner.evaluate(lambda t: np.zeros((len(t), 2)), tmp_path, ["transfer"], transfer_protocol="sklearn")
    assert calls == [
        {"fast": True, "protocol": "senteval"},
        {"fast": False, "protocol": "senteval"},
        {"fast": False, "protocol": "sklearn"},
    ]
    with pytest.raises(ValueError, match="unknown transfer protocol"):
        runner.evaluate(lambda t: np.zeros((len(t), 2)), tmp_path, ["transfer"], transfer_protocol="svm")
    assert EvalConfig().transfer_protocol == "senteval"
    with pytest.raises(ConfigError, match="eval.transfer_protocol"):
        EvalConfig(transfer_protocol="svm")
    args = ["eval", "--model", str(tiny_bert), "--pooler", "avg", "--data-dir", str(tmp_path), "--tasks"]
    assert main([*args, "transfer_fast", "--transfer-protocol", "sklearn"]) == 0
    assert calls[-1] == {"fast": True, "protocol": "sklearn"}
    assert main([*args, "transfer"]) == 0
    assert calls[-1] == {"fast": False, "protocol": "senteval"}
    with pytest.raises(SystemExit) as err:
        main([*args, "transfer", "--transfer-protocol", "svm"])
    assert err.value.code == 2 and "invalid choice: 'svm'" in capsys.readouterr().err


@settings(max_examples=12, deadline=None)
@given(
    n=st.integers(24, 90),
    dim=st.integers(2, 12),
    classes=st.integers(2, 4),
    optim=st.sampled_from(["adam", "rmsprop"]),
    grid=st.lists(st.sampled_from([0.0, 1e-5, 1e-3, 1e-1, 1.0]), min_size=1, max_size=4),
    seed=st.integers(0, 2**16),
)
def test_a_grid_trained_side_by_side_ends_as_each_model_alone(
    n: int, dim: int, classes: int, optim: str, grid: list[float], seed: int
) -> None:
    """One ``LogisticRegression`` over an L2 grid: every model's weights, best accuracy and stopping pass are
    bitwise those of the same model trained alone (the grid only shares the mini-batches' overhead)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    x = (rng.normal(size=(n, dim)) + 0.7 * np.eye(classes, dim)[y]).astype(np.float32)
    cfg = ClassifierConfig(optim=optim, batch_size=8, tenacity=2, epoch_size=1, kfold=3, max_epoch=30)
    dev = (x[: n // 3], y[: n // 3])
    together = LogisticRegression(dim, classes, grid, cfg, seed)
    accs = together.fit(x[n // 3 :], y[n // 3 :], validation_data=dev)
    for g, reg in enumerate(grid):
        alone = LogisticRegression(dim, classes, reg, cfg, seed)
        assert alone.fit(x[n // 3 :], y[n // 3 :], validation_data=dev) == accs[g]
        assert alone.stopped_at[0] == together.stopped_at[g]
        assert torch.equal(alone.weight, together.weight[g]) and torch.equal(alone.bias, together.bias[g])
        assert alone.score(x, y) == together.score(x, y)[g]
