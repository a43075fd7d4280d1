"""SentEval transfer tasks: readers on the real data, CV splits, MRPC features, classifier protocols."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

from sentcl.evaluation.senteval_readers import TREC_CLASSES, read_binary_task, read_mrpc, read_sst2, read_trec
from sentcl.evaluation.transfer import (
    TRANSFER_TASKS,
    dev_split_accuracy,
    evaluate_transfer,
    format_transfer_table,
    inner_kfold_accuracy,
    kfold_then_test,
    mrpc_features,
    stratified_folds,
)

# ---------------------------------------------------------------------- readers on the real data


@pytest.mark.parametrize(
    ("task", "n", "n_pos"),
    [("MR", 10662, 5331), ("CR", 3775, 2407), ("SUBJ", 10000, 5000), ("MPQA", 10606, 3312)],
)
def test_binary_reader_sizes(data_dir: Path, task: str, n: int, n_pos: int) -> None:
    data = read_binary_task(data_dir, task)
    assert len(data) == len(data.labels) == n  # SentEval's counts (blank lines kept as SentEval does)
    assert int(data.labels.sum()) == n_pos
    assert all(t == " ".join(t.split()) for t in data.texts)


def test_sst2_trec_mrpc_sizes(data_dir: Path) -> None:
    assert {k: len(v) for k, v in read_sst2(data_dir).items()} == {"train": 67349, "dev": 872, "test": 1821}
    trec = read_trec(data_dir)
    assert {k: len(v) for k, v in trec.items()} == {"train": 5452, "test": 500}
    # Coarse label counts of train_5500.label, counted with `cut -d: -f1 | sort | uniq -c`.
    counts = dict(zip(TREC_CLASSES, np.bincount(trec["train"].labels).tolist(), strict=True))
    assert counts == {"ABBR": 86, "DESC": 1162, "ENTY": 1250, "HUM": 1223, "LOC": 835, "NUM": 896}
    assert (
        trec["train"].texts[0] == "How did serfdom develop in and then leave Russia ?"
    )  # "DESC:manner " removed
    assert any("sister\u00f0city" in t for t in trec["train"].texts)  # byte 0xF0 read as latin-1
    mrpc = read_mrpc(data_dir)
    assert {k: len(v) for k, v in mrpc.items()} == {"train": 4076, "test": 1725}
    assert mrpc["train"].first[0].startswith("Amrozi accused his brother")
    assert mrpc["train"].labels[:2].tolist() == [1, 0]


def write(path: Path, lines: list[str], encoding: str = "utf-8") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(("\n".join(lines) + "\n").encode(encoding))


def test_bad_lines_name_file_and_line(tmp_path: Path) -> None:
    sst = tmp_path / "senteval" / "SST" / "binary"
    for name in ("sentiment-dev", "sentiment-test"):
        write(sst / name, ["fine\t1"])
    write(sst / "sentiment-train", ["good movie\t1", "no label here"])
    with pytest.raises(ValueError, match=r"sentiment-train, line 2: expected 'sentence<TAB>label'"):
        read_sst2(tmp_path)
    write(sst / "sentiment-train", ["good movie\t1", "bad movie\t2"])
    with pytest.raises(ValueError, match=r"sentiment-train, line 2: label '2'"):
        read_sst2(tmp_path)
    trec = tmp_path / "senteval" / "TREC"
    write(trec / "TREC_10.label", ["NUM:date When ?"])
    write(trec / "train_5500.label", ["NUM:date When ?", "XYZ:other What ?"])
    with pytest.raises(ValueError, match=r"train_5500.label, line 2: label 'XYZ'"):
        read_trec(tmp_path)
    write(trec / "train_5500.label", ["no colon at all"])
    with pytest.raises(ValueError, match=r"train_5500.label, line 1: expected 'COARSE:fine question'"):
        read_trec(tmp_path)
    mrpc = tmp_path / "senteval" / "MRPC"
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    write(mrpc / "msr_paraphrase_train.txt", [header, "1\t1\t2\ta\tb", "1\t3\t4\tonly one sentence"])
    with pytest.raises(
        ValueError, match=r"msr_paraphrase_train.txt, line 3: expected 5 tab-separated fields, got 4"
    ):
        read_mrpc(tmp_path)
    write(mrpc / "msr_paraphrase_train.txt", ["1\t1\t2\ta\tb"])
    with pytest.raises(ValueError, match=r"msr_paraphrase_train.txt, line 1: expected the header"):
        read_mrpc(tmp_path)


# ---------------------------------------------------------------------- building blocks


def test_stratified_folds_are_disjoint_covering_and_stratified() -> None:
    labels = np.array([0] * 53 + [1] * 31 + [2] * 7)
    np.random.default_rng(0).shuffle(labels)
    k = 5
    folds = stratified_folds(labels, k, seed=1)
    assert len(folds) == k
    seen = np.concatenate([test for _, test in folds])
    assert sorted(seen.tolist()) == list(range(len(labels)))  # disjoint and covering
    for train, test in folds:
        assert sorted(np.concatenate([train, test]).tolist()) == list(range(len(labels)))
        for c, n_c in zip(*np.unique(labels, return_counts=True), strict=True):
            assert abs(int((labels[test] == c).sum()) - n_c / k) < 1  # per fold: within 1 example
    assert [t.tolist() for _, t in stratified_folds(labels, k, seed=1)] == [t.tolist() for _, t in folds]
    with pytest.raises(ValueError, match="k="):
        stratified_folds(labels, 1, seed=0)


def test_mrpc_features_against_direct_construction() -> None:
    rng = np.random.default_rng(0)
    u, v = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    expected = np.array([np.concatenate([u[i], v[i], np.abs(u[i] - v[i]), u[i] * v[i]]) for i in range(4)])
    np.testing.assert_array_equal(mrpc_features(u, v), expected)
    senteval = np.array(
        [[abs(u[i, d] - v[i, d]) for d in range(3)] + [u[i, d] * v[i, d] for d in range(3)] for i in range(4)]
    )
    np.testing.assert_array_equal(mrpc_features(u, v, include_uv=False), senteval)
    with pytest.raises(ValueError, match="one shape"):
        mrpc_features(u, v[:, :2])


def separable(n: int, dim: int, classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Well-separated Gaussian blobs: class c sits at 4·e_c, noise 0.3."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    x = rng.normal(scale=0.3, size=(n, dim))
    x[np.arange(n), y] += 4.0
    return x, y


def test_classifiers_reach_100_on_separable_data() -> None:
    x, y = separable(120, 10, 2, seed=0)
    res = inner_kfold_accuracy(x, y, k=5, grid=(0.25, 1.0, 4.0), seed=0)
    assert res["acc"] == 100.0 and res["dev_acc"] == 100.0 and len(res["C"]) == 5
    xt, yt = separable(60, 10, 6, seed=1)
    res, pred = kfold_then_test(*separable(120, 10, 6, seed=2), xt, yt, k=5, grid=(0.5, 2.0), seed=0)
    assert res["acc"] == 100.0 and pred.tolist() == yt.tolist()
    res = dev_split_accuracy(
        separable(80, 10, 2, 3), separable(20, 10, 2, 4), separable(30, 10, 2, 5), (1.0,), 0
    )
    assert res["acc"] == 100.0


def test_random_labels_stay_near_chance() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(400, 20)), rng.integers(0, 2, size=400)
    assert 35.0 < inner_kfold_accuracy(x, y, k=5, grid=(1.0,), seed=0)["acc"] < 65.0


# ---------------------------------------------------------------------- end to end


BINARY_SYNTH = {
    "MR": ("rt-polarity.pos", "rt-polarity.neg"),
    "CR": ("custrev.pos", "custrev.neg"),
    "SUBJ": ("subj.objective", "subj.subjective"),
    "MPQA": ("mpqa.pos", "mpqa.neg"),
}


def write_synthetic_senteval(root: Path) -> None:
    """Tiny files in SentEval's layout; the class (or the MRPC paraphrase relation) is carried by a topic word."""
    se = root / "senteval"
    for folder, (pos, neg) in BINARY_SYNTH.items():
        write(se / folder / pos, [f"topic0 {folder} item {i}" for i in range(30)])
        blank = [""]  # a blank line, kept as an empty sentence (as SentEval does)
        write(se / folder / neg, [f"topic1 {folder} item {i}" for i in range(30)] + blank)
    for split, n in [("train", 40), ("dev", 10), ("test", 12)]:
        write(
            se / "SST" / "binary" / f"sentiment-{split}",
            [f"topic{i % 2} sst {split} {i}\t{i % 2}" for i in range(n)],
        )
    for name, n in [("train_5500.label", 60), ("TREC_10.label", 18)]:
        write(
            se / "TREC" / name, [f"{TREC_CLASSES[i % 6]}:x topic{i % 6} q {i} ?" for i in range(n)], "latin-1"
        )
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    for name, n in [("msr_paraphrase_train.txt", 50), ("msr_paraphrase_test.txt", 20)]:
        rows = [
            f"{int(i % 2 == 0)}\t{i}\t{i}\ttopic{i % 5} a {i}\ttopic{(i % 5 + (i % 2)) % 5} b {i}"
            for i in range(n)
        ]
        write(se / "MRPC" / name, [header, *rows])


def topic_encoder(texts: list[str]) -> np.ndarray:
    """One-hot of the topicN word (N < 6) plus small word-hash noise; the blank sentence maps to topic 1."""
    out = np.zeros((len(texts), 16))
    for i, text in enumerate(texts):
        words = text.split() or ["topic1"]
        out[i, int(words[0].removeprefix("topic"))] = 1.0
        for w in words[1:]:
            out[i, 6 + zlib.crc32(w.encode()) % 10] += 0.01
    return out


def test_evaluate_transfer_end_to_end_on_synthetic_files(tmp_path: Path) -> None:
    write_synthetic_senteval(tmp_path)
    calls: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        assert len(set(texts)) == len(texts)  # each task's sentences deduplicated
        calls.append(texts)
        return topic_encoder(texts)

    result = evaluate_transfer(encode, tmp_path, fast=True)
    assert len(calls) == len(TRANSFER_TASKS)  # one encode call per task
    for task in TRANSFER_TASKS:
        assert result[task]["acc"] == 100.0, task
    assert result["MRPC"]["f1"] == 100.0
    assert result["avg"] == 100.0
    assert result["MR"]["n"] == 61 and result["SST2"]["n"] == 62 and result["TREC"]["n_test"] == 18
    # the default protocol is SentEval's (5 outer folds in fast mode, one L2 per fold from its grid)
    assert result["MR"]["protocol"] == "senteval" and len(result["MR"]["l2reg"]) == 5
    assert set(result["MR"]["l2reg"]) <= {1e-5, 1e-4, 1e-3, 1e-2}
    full = evaluate_transfer(topic_encoder, tmp_path, tasks=("CR", "TREC"), fast=False, protocol="sklearn")
    assert full["CR"]["acc"] == 100.0 and len(full["CR"]["C"]) == 10 and full["TREC"]["acc"] == 100.0


def hash_encoder(texts: list[str]) -> np.ndarray:
    """A cheap deterministic sentence encoder: bag of words, each word a fixed random 64-d vector."""
    table = np.random.default_rng(0).normal(size=(4096, 64))
    out = np.zeros((len(texts), 64))
    for i, text in enumerate(texts):
        for w in text.lower().split():
            out[i] += table[zlib.crc32(w.encode()) % 4096]
    return out / np.maximum(1.0, np.linalg.norm(out, axis=1, keepdims=True))


@pytest.mark.slow
def test_evaluate_transfer_fast_on_real_data(data_dir: Path) -> None:
    result = evaluate_transfer(
        hash_encoder, data_dir, tasks=("CR", "SST2", "TREC", "MRPC"), fast=True, protocol="sklearn"
    )
    assert result["CR"]["n"] == 3775 and len(result["CR"]["C"]) == 5
    assert (result["SST2"]["n_train"], result["SST2"]["n_dev"], result["SST2"]["n_test"]) == (
        67349,
        872,
        1821,
    )
    assert (result["TREC"]["n_train"], result["TREC"]["n_test"]) == (5452, 500)
    assert (result["MRPC"]["n_train"], result["MRPC"]["n_test"]) == (4076, 1725)
    # Bag of words beats the majority class on TREC test (DESC: 138 of 500 = 27.6%) by far.
    assert result["TREC"]["acc"] > 45.0
    for task in ("CR", "SST2", "MRPC"):
        assert 50.0 < result[task]["acc"] < 100.0
    assert 0.0 < result["MRPC"]["f1"] <= 100.0
    assert result["avg"] == pytest.approx(np.mean([result[t]["acc"] for t in ("CR", "SST2", "TREC", "MRPC")]))


def test_unknown_task_and_table() -> None:
    with pytest.raises(ValueError, match="unknown transfer task"):
        evaluate_transfer(hash_encoder, None, tasks=("MR", "SNLI"))
    table = format_transfer_table(
        {
            "a": {"MR": {"acc": 80.0}, "MRPC": {"acc": 70.5, "f1": 80.25}, "avg": 75.25},
            "b": {"MR": {"acc": 1.0}, "avg": 1.0},
        }
    )
    assert table.splitlines() == [
        "| Model | MR | MRPC | Avg. | MRPC F1 |",
        "|---|---:|---:|---:|---:|",
        "| a | 80.00 | 70.50 | 75.25 | 80.25 |",
        "| b | 1.00 | - | 1.00 | - |",
    ]
