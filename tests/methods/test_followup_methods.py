"""ESimCSE, MixCSE and ArcCSE train end to end on the tiny BERT; ESimCSE's queue survives a kill and resume."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from safetensors.torch import load_file

from sentcl.cli import main

QUEUE = 20  # 2.5 x batch 8


def write_recipe(tmp: Path, tiny_bert: Path, data_dir: Path, objective: dict) -> Path:
    from helpers.data import tiny_recipe, write_corpus

    corpus = write_corpus(tmp / "corpus.txt", 48)
    recipe = tiny_recipe(tiny_bert, data_dir, corpus, tmp / "run", eval_steps=4)
    recipe["objective"] = objective
    path = tmp / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe), encoding="utf-8")
    return path


def train_records(run: Path) -> list[dict]:
    lines = (run / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["event"] == "train"]


@pytest.fixture(scope="module")
def esimcse_run(tmp_path_factory: pytest.TempPathFactory, tiny_bert: Path, data_dir: Path) -> Path:
    tmp = tmp_path_factory.mktemp("esimcse")
    recipe = write_recipe(tmp, tiny_bert, data_dir, {"name": "esimcse"})
    assert main(["train", "--config", str(recipe)]) == 0
    return tmp


@pytest.mark.parametrize(
    "objective",
    [{"name": "mixcse", "mix_lambda": 0.2}, {"name": "arccse", "angular_margin": 10.0}],
    ids=["mixcse", "arccse"],
)
def test_method_trains_end_to_end(tmp_path: Path, tiny_bert: Path, data_dir: Path, objective: dict) -> None:
    assert main(["train", "--config", str(write_recipe(tmp_path, tiny_bert, data_dir, objective))]) == 0
    run = tmp_path / "run"
    records = train_records(run)
    assert [r["step"] for r in records] == [1, 2, 3, 4]
    assert all(np.isfinite(r["loss"]) for r in records)
    if objective["name"] == "arccse":
        assert all("triplet" in r and "arccon" in r for r in records)
    start = load_file(str(tiny_bert / "model.safetensors"))
    trained = load_file(str(run / "checkpoint-4" / "model" / "model.safetensors"))
    key = next(k for k in start if "encoder.layer.0.attention" in k and k.endswith("weight"))
    assert not torch.allclose(start[key], trained[key])
    assert "stsb_dev" in json.loads((run / "results.json").read_text())["results"]


def test_esimcse_fills_its_queue_and_saves_it(esimcse_run: Path) -> None:
    run = esimcse_run / "run"
    records = train_records(run)
    assert all(np.isfinite(r["loss"]) for r in records)
    # the queue holds the preceding batches (8 sentences each), at most 2.5 x batch
    assert [r["queue_size"] for r in records] == [0, 8, 16, QUEUE]
    state = torch.load(run / "checkpoint-4" / "training_state.pt", weights_only=True)
    companion = state["companion"]
    assert companion["queue"].shape == (QUEUE, 32)
    assert any(k.startswith("momentum.") for k in companion)
    # the saved model is the trained encoder, not the momentum copy
    saved = load_file(str(run / "checkpoint-4" / "model" / "model.safetensors"))
    key = next(k for k in saved if "encoder.layer.0.attention" in k and k.endswith("weight"))
    momentum_key = next(k for k in companion if k.startswith("momentum.") and k.endswith(key))
    assert not torch.allclose(saved[key], companion[momentum_key])


def test_esimcse_resume_after_a_kill_equals_the_uninterrupted_run(
    tmp_path: Path, esimcse_run: Path, tiny_bert: Path, data_dir: Path
) -> None:
    shutil.copytree(esimcse_run / "run", tmp_path / "run")
    shutil.rmtree(tmp_path / "run" / "checkpoint-4")  # killed after step 2's checkpoint
    recipe = write_recipe(tmp_path, tiny_bert, data_dir, {"name": "esimcse"})
    assert main(["train", "--config", str(recipe), "--resume"]) == 0
    expected_model = load_file(str(esimcse_run / "run" / "checkpoint-4" / "model" / "model.safetensors"))
    resumed_model = load_file(str(tmp_path / "run" / "checkpoint-4" / "model" / "model.safetensors"))
    for key, value in expected_model.items():
        torch.testing.assert_close(resumed_model[key], value, rtol=0, atol=1e-6, msg=key)
    expected = torch.load(esimcse_run / "run" / "checkpoint-4" / "training_state.pt", weights_only=True)
    resumed = torch.load(tmp_path / "run" / "checkpoint-4" / "training_state.pt", weights_only=True)
    assert expected["companion"].keys() == resumed["companion"].keys()
    for key, value in expected["companion"].items():
        torch.testing.assert_close(resumed["companion"][key], value, rtol=0, atol=1e-6, msg=key)
    losses = [r["loss"] for r in train_records(tmp_path / "run") if r["step"] > 2][-2:]
    assert losses == pytest.approx([r["loss"] for r in train_records(esimcse_run / "run")][2:], abs=1e-6)
