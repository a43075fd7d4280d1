"""Smoke tests of bench/transfer_protocols.py and bench/transfer_grid.py on the tiny BERT and tiny files: they
run and write their JSON; transfer_protocols reuses its cache, and the hand-written SentEval reference agrees
with the module on the same embeddings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def write_tiny_tasks(root: Path) -> None:
    trec = root / "senteval" / "TREC"
    trec.mkdir(parents=True)
    classes = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
    for name, n in [("train_5500.label", 60), ("TREC_10.label", 12)]:
        lines = [f"{classes[i % 3]}:x what {'is ' * (i % 4)}topic{i % 3} q{i} ?" for i in range(n)]
        (trec / name).write_text("\n".join(lines) + "\n", encoding="latin-1")
    mrpc = root / "senteval" / "MRPC"
    mrpc.mkdir(parents=True)
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    for name, n in [("msr_paraphrase_train.txt", 50), ("msr_paraphrase_test.txt", 10)]:
        rows = [
            f"{i % 2}\t{i}\t{i}\tthe cat {'sat ' * (i % 3)}{i}\ta dog {'ran ' * (i % 2)}{i}" for i in range(n)
        ]
        (mrpc / name).write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")


def test_transfer_protocols_bench(tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    from bench import transfer_protocols

    write_tiny_tasks(tmp_path)
    out, cache = tmp_path / "out.json", str(tmp_path / "cache" / "emb")
    argv = ["--model", str(tiny_bert), "--pooler", "avg", "--cache", cache, "--data-dir", str(tmp_path)]
    argv += ["--modes", "fast", "--tasks", "TREC,MRPC", "--reference", "TREC,MRPC", "--output", str(out)]
    transfer_protocols.main(argv)
    data = json.loads(out.read_text(encoding="utf-8"))
    assert {"benchmark", "command", "machine", "loadavg_end", "encode_s"} <= set(data)
    fast = data["results"]["fast"]
    assert set(fast) == {"senteval", "sklearn", "reference"}
    for task in ("TREC", "MRPC"):
        ours, ref = fast["senteval"][task], fast["reference"][task]
        assert (ours["acc"], ours["dev_acc"], ours["l2reg"]) == (ref["acc"], ref["dev_acc"], ref["l2reg"])
        assert 0 <= fast["sklearn"][task]["acc"] <= 100 and fast["sklearn"][task]["seconds"] > 0
    assert Path(cache + ".npy").is_file()
    argv = argv[:8] + ["--modes", "fast", "--tasks", "TREC", "--protocols", "senteval"]
    again = transfer_protocols.main(argv + ["--output", str(tmp_path / "again.json")])
    assert again["encode_s"] == 0.0  # every sentence came from the cache
    assert again["results"]["fast"]["senteval"]["TREC"]["acc"] == fast["senteval"]["TREC"]["acc"]


def test_transfer_grid_bench(tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bench/transfer_grid.py: both ways run on the same embeddings, give the module's own results, and time."""
    monkeypatch.syspath_prepend(str(ROOT))
    from bench import transfer_grid
    from sentcl.evaluation import senteval_classifier

    write_tiny_tasks(tmp_path)
    out = tmp_path / "grid.json"
    argv = ["--model", str(tiny_bert), "--data-dir", str(tmp_path), "--tasks", "TREC,MRPC", "--rounds", "1"]
    data = transfer_grid.main([*argv, "--output", str(out)])
    assert json.loads(out.read_text(encoding="utf-8"))["total"] == data["total"]
    for task in ("TREC", "MRPC"):
        row = data["results"][task]
        assert row["equal"] and len(row["seconds"]["grid"]) == len(row["seconds"]["alone"]) == 1
        assert row["grid_s"] > 0 and row["alone_s"] > 0 and 0 <= row["acc"] <= 100
    assert senteval_classifier.LogisticRegression is transfer_grid.GridModel  # restored after each way
