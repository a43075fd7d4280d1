"""training.report_to=tensorboard read back with TensorBoard's own reader; provenance.json of a run."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import transformers
import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from sentcl.cli import main
from sentcl.training.provenance import PROVENANCE_FILE

STEPS, LR = 4, 1e-3


def write_recipe(tmp: Path, tiny_bert: Path, data_dir: Path, **training: object) -> Path:
    from helpers.data import tiny_recipe, write_corpus

    settings = {
        "max_steps": STEPS,
        "save_steps": 0,
        "log_steps": 2,
        "learning_rate": LR,
        "seed": 7,
        **training,
    }
    recipe = tiny_recipe(tiny_bert, data_dir, write_corpus(tmp / "corpus.txt", 40), tmp / "run", **settings)
    recipe["model"]["pooler"] = "avg"
    recipe["eval"]["track_alignment_uniformity"] = True
    path = tmp / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, tiny_bert: Path, data_dir: Path) -> Path:
    tmp = tmp_path_factory.mktemp("tracking")
    recipe = write_recipe(tmp, tiny_bert, data_dir, report_to="tensorboard")
    assert main(["train", "--config", str(recipe)]) == 0
    return tmp / "run"


def _records(run: Path, event: str) -> list[dict]:
    lines = (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r.get("event") == event]


def test_tensorboard_events_read_back(run_dir: Path) -> None:
    acc = EventAccumulator(str(run_dir / "tensorboard"))
    acc.Reload()
    scalars = {tag: {e.step: e.value for e in acc.Scalars(tag)} for tag in acc.Tags()["scalars"]}
    for tag in ("train/loss", "train/lr", "train/sentences_per_s"):
        assert sorted(scalars[tag]) == list(range(1, STEPS + 1)), tag  # every step
    # the schedule: linear decay from LR to 0 over STEPS (no warm-up); the rate after step t is LR (1 - t/T)
    for t, lr in scalars["train/lr"].items():
        assert lr == pytest.approx(LR * (1 - t / STEPS), abs=1e-9)
    assert all(v > 0 for v in scalars["train/sentences_per_s"].values())
    for record in _records(run_dir, "train"):  # the loop's own log agrees at its log steps
        assert scalars["train/loss"][record["step"]] == pytest.approx(record["loss"], rel=1e-6)
    evals = {r["step"]: r for r in _records(run_dir, "eval")}
    assert sorted(scalars["eval/stsb_dev"]) == sorted(evals) == [2, 4]
    for step, record in evals.items():
        assert scalars["eval/stsb_dev"][step] == pytest.approx(record["stsb_dev"], rel=1e-6)
        assert scalars["geometry/uniformity"][step] == pytest.approx(record["uniformity"], rel=1e-6)
    assert sorted(scalars["geometry/alignment"]) == [0, 2, 4]  # step 0: the starting model


def test_provenance(run_dir: Path) -> None:
    record = json.loads((run_dir / PROVENANCE_FILE).read_text(encoding="utf-8"))
    assert record["config"] == json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    assert record["seed"] == 7 and record["config"]["training"]["seed"] == 7
    assert isinstance(record["argv"], list) and record["argv"]
    assert record["versions"]["torch"] == torch.__version__
    assert record["versions"]["transformers"] == transformers.__version__
    assert record["versions"]["sentcl"]
    src = Path(__file__).resolve().parents[2] / "src" / "sentcl"
    head = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:  # tests run from a checkout
        assert record["git"]["commit"] == head.stdout.strip()
        assert isinstance(record["git"]["dirty"], bool)
    assert record["hardware"]["logical_cores"] == os.cpu_count()
    assert record["hardware"]["torch_threads"] >= 1 and record["hardware"]["cpu"]
    assert not list(run_dir.glob(".*.tmp"))  # written atomically: no temporary left behind


@pytest.mark.parametrize("library", ["wandb", "mlflow"])
def test_report_to_missing_library_is_one_clear_line(
    library: str,
    tmp_path: Path,
    tiny_bert: Path,
    data_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The library is hidden from the import system (installed or not), so the refusal is always tested."""
    real_find_spec = importlib.util.find_spec
    monkeypatch.delitem(sys.modules, library, raising=False)
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == library else real_find_spec(name, *a)
    )
    recipe = write_recipe(tmp_path, tiny_bert, data_dir, report_to=library)
    assert main(["train", "--config", str(recipe)]) == 2
    err = capsys.readouterr().err
    assert f"training.report_to={library}" in err and f"pip install {library}" in err
    assert not (tmp_path / "run" / "metrics.jsonl").exists()  # refused before any work
