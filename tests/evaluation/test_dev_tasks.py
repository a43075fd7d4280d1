"""eval.dev_task on the user's own data (pairs:FILE, retrieval:DIR): the best checkpoint is chosen on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from test_retrieval_eval import QRELS, write_beir  # this folder is on sys.path (pytest's rootdir-less import)

from sentcl.cli import main
from sentcl.config import ConfigError, EvalConfig
from sentcl.evaluation.pairs import evaluate_pairs
from sentcl.modeling.open import load_encoder

PAIRS = [
    ("a man is playing a guitar", "a man plays the guitar", 4.8),
    ("a woman rides a horse", "a dog runs in the garden", 0.5),
    ("the stock price rises", "the company stock price falls", 2.0),
    ("a child is reading", "a young child reads", 4.0),
    ("the team wins the game", "a bird sits on a tree", 0.2),
    ("a cat is eating", "the cat eats", 4.5),
]


def write_pairs(path: Path) -> Path:
    path.write_text("sentence1\tsentence2\tscore\n" + "".join(f"{a}\t{b}\t{s}\n" for a, b, s in PAIRS))
    return path


def train(tmp_path: Path, tiny_bert: Path, corpus: Path, data_dir: Path, dev_task: str) -> int:
    recipe = {
        "model": {"name_or_path": str(tiny_bert)},
        "data": {"data_dir": str(data_dir), "train_file": str(corpus)},
        "training": {
            "output_dir": str(tmp_path / "run"),
            "batch_size": 8,
            "max_steps": 2,
            "eval_steps": 1,
            "progress": False,
        },
        "eval": {"dev_task": dev_task, "final_tasks": []},
    }
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(recipe), encoding="utf-8")
    return main(["train", "--config", str(tmp_path / "r.yaml")])


def test_pairs_dev_task_picks_the_best_checkpoint(tmp_path, tiny_bert, corpus_file, data_dir) -> None:  # noqa: ANN001
    dev = write_pairs(tmp_path / "dev.tsv")
    assert train(tmp_path, tiny_bert, corpus_file, data_dir, f"pairs:{dev}") == 0
    events = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    scores = [e[f"pairs:{dev}"] for e in events if e.get("event") == "eval"]
    assert len(scores) >= 2
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["best_dev_score"] == pytest.approx(max(scores))
    best = load_encoder(str(tmp_path / "run" / "best"))
    assert evaluate_pairs(lambda s: best.encode(s), dev)["spearman"] == pytest.approx(max(scores), abs=1e-3)


def test_retrieval_dev_task_uses_dev_qrels(tmp_path, tiny_bert, corpus_file, data_dir) -> None:  # noqa: ANN001
    folder = write_beir(tmp_path / "beir", QRELS, split="dev")
    assert train(tmp_path, tiny_bert, corpus_file, data_dir, f"retrieval:{folder}") == 0
    events = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert all(0 < e[f"retrieval:{folder}"] <= 100 for e in events if e.get("event") == "eval")


def test_bad_dev_file_fails_before_training(tmp_path, tiny_bert, corpus_file, data_dir, capsys) -> None:  # noqa: ANN001
    bad = tmp_path / "dev.tsv"
    bad.write_text("sentence1\tsentence2\tscore\na\tb\t1\nc\td\tn/a\n")
    assert train(tmp_path, tiny_bert, corpus_file, data_dir, f"pairs:{bad}") == 2
    assert f"{bad}:3: score 'n/a' is not a number" in capsys.readouterr().err
    metrics = tmp_path / "run" / "metrics.jsonl"
    assert not metrics.exists() or '"train"' not in metrics.read_text()
    assert train(tmp_path, tiny_bert, corpus_file, data_dir, "pairs:nowhere.tsv") == 2
    assert "nowhere.tsv not found" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "ok"),
    [("pairs:dev.tsv", True), ("retrieval:beir", True), ("pairs:", False), ("sts", False), ("nope:x", False)],
)
def test_config_accepts_prefixed_dev_tasks(value: str, ok: bool) -> None:
    if ok:
        assert EvalConfig(dev_task=value).dev_task == value
    else:
        with pytest.raises(ConfigError, match="eval.dev_task"):
            EvalConfig(dev_task=value)


def test_the_best_models_dev_task_is_evaluated_once(
    tmp_path: Path, tiny_bert: Path, corpus_file: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A final task that is the dev task reuses the best step's dev evaluation (the same model): STS-B dev is
    evaluated once per dev step, not once more on best/; the reused result is what evaluating best/ gives."""
    import dataclasses

    from sentcl.evaluation import runner
    from sentcl.evaluation.embedding import evaluation_encode_fn

    calls: list[str] = []
    task = runner.TASKS["stsb_dev"]

    def counted(*args: object) -> dict:
        calls.append("stsb_dev")
        return task.evaluate(*args)

    monkeypatch.setitem(runner.TASKS, "stsb_dev", dataclasses.replace(task, evaluate=counted))
    recipe = {
        "model": {"name_or_path": str(tiny_bert)},
        "data": {"data_dir": str(data_dir), "train_file": str(corpus_file)},
        "training": {"output_dir": str(tmp_path / "run"), "batch_size": 8, "max_steps": 2, "eval_steps": 1},
        "eval": {"dev_task": "stsb_dev", "final_tasks": ["stsb_dev"], "compare_with_start": False},
    }
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(recipe), encoding="utf-8")
    assert main(["train", "--config", str(tmp_path / "r.yaml")]) == 0
    assert len(calls) == 2  # steps 1 and 2; none for the final evaluation
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    best = load_encoder(str(tmp_path / "run" / "best"))
    again = task.evaluate(evaluation_encode_fn(best), data_dir, runner.EvalOptions())
    reused = runner.headline("stsb_dev", results["results"]["stsb_dev"])
    assert reused == pytest.approx(runner.headline("stsb_dev", again), abs=1e-6)
    assert reused == pytest.approx(results["best_dev_score"])
