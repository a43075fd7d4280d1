"""A few real training steps on a tiny random BERT: files, reloads (sentcl and plain AutoModel), resume."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from safetensors.torch import load_file
from transformers import AutoModel, AutoTokenizer

from sentcl.cli import main
from sentcl.modeling.encoder import SentenceEncoder

SENTENCES = ["a man is playing a guitar", "the dog runs near the river", "stock price falls", "a"]


def write_recipe(tmp_path: Path, tiny_bert: Path, corpus: Path, data_dir: Path, **training: object) -> Path:
    from helpers.data import tiny_recipe

    recipe = tiny_recipe(tiny_bert, data_dir, corpus, tmp_path / "run", **training)
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory: pytest.TempPathFactory, tiny_bert: Path, data_dir: Path) -> Path:
    from helpers.data import write_corpus

    tmp = tmp_path_factory.mktemp("e2e")
    corpus = write_corpus(tmp / "corpus.txt", 40)
    assert main(["train", "--config", str(write_recipe(tmp, tiny_bert, corpus, data_dir))]) == 0
    return tmp / "run"


def test_run_folder_contents(trained_run: Path) -> None:
    for name in (
        "config.json",
        "model.safetensors",
        "sentcl.json",
        "sentcl_head.safetensors",
        "tokenizer_config.json",
    ):
        assert (trained_run / "best" / name).is_file(), name
    assert sorted(p.name for p in trained_run.glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-4"]
    assert (trained_run / "checkpoint-4" / "training_state.pt").is_file()
    assert not list(trained_run.glob(".tmp-*")), "no half-written folders left behind"
    records = [json.loads(line) for line in (trained_run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if r["event"] == "train"] == [1, 2, 3, 4]
    assert [r["step"] for r in records if r["event"] == "eval"] == [2, 4]
    assert all(np.isfinite(r["loss"]) for r in records if r["event"] == "train")
    data = next(r for r in records if r["event"] == "data")
    assert data["examples"] == 40 and data["skipped"] == {"empty_lines": 0}
    results = json.loads((trained_run / "results.json").read_text())
    evals = {r["step"]: r["stsb_dev"] for r in records if r["event"] == "eval"}
    best_step = max(evals, key=lambda step: evals[step])  # the step whose recorded dev score is highest
    assert results["best_step"] == best_step and results["best_dev_score"] == evals[best_step]
    assert [r["best"] for r in records if r["event"] == "eval"] == [True, evals[4] > evals[2]]
    assert "stsb_dev" in results["results"]


def test_parameters_changed(trained_run: Path, tiny_bert: Path) -> None:
    start = load_file(str(tiny_bert / "model.safetensors"))
    trained = load_file(str(trained_run / "checkpoint-4" / "model" / "model.safetensors"))
    key = next(k for k in start if "encoder.layer.0.attention" in k and k.endswith("weight"))
    assert not torch.allclose(start[key], trained[key])


def test_best_model_reloads_with_plain_automodel(trained_run: Path) -> None:
    best = trained_run / "best"
    ours = SentenceEncoder.from_pretrained(str(best)).encode(SENTENCES)
    # independent path: plain transformers + the head weights applied by hand
    plain = AutoModel.from_pretrained(str(best)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(best))
    batch = tokenizer(SENTENCES, padding=True, truncation=True, max_length=16, return_tensors="pt")
    head = load_file(str(best / "sentcl_head.safetensors"))
    with torch.no_grad():
        cls = plain(**batch).last_hidden_state[:, 0]
        expected = torch.tanh(cls @ head["dense.weight"].T + head["dense.bias"]).numpy()
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pooler", ["cls", "avg"])
def test_save_and_reload_give_identical_embeddings(tmp_path: Path, tiny_bert: Path, pooler: str) -> None:
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler=pooler, mlp_only_train=False)
    before = model.encode(SENTENCES)
    model.save_pretrained(tmp_path / "saved")
    after = SentenceEncoder.from_pretrained(str(tmp_path / "saved")).encode(SENTENCES)
    np.testing.assert_array_equal(before, after)


def test_resume_reproduces_the_uninterrupted_run(
    tmp_path: Path, trained_run: Path, tiny_bert: Path, data_dir: Path
) -> None:
    from helpers.data import write_corpus

    corpus = write_corpus(tmp_path / "corpus.txt", 40)
    recipe = write_recipe(tmp_path, tiny_bert, corpus, data_dir)
    shutil.copytree(trained_run, tmp_path / "run")
    expected = load_file(str(trained_run / "checkpoint-4" / "model" / "model.safetensors"))
    shutil.rmtree(tmp_path / "run" / "checkpoint-4")  # as if the job died after step 2's checkpoint
    assert main(["train", "--config", str(recipe), "--resume"]) == 0
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    resume = [r for r in records if r["event"] == "resume"]
    assert len(resume) == 1 and resume[0]["step"] == 2
    later = records[records.index(resume[0]) + 1 :]
    assert [r["step"] for r in later if r["event"] == "train"] == [3, 4]
    resumed = load_file(str(tmp_path / "run" / "checkpoint-4" / "model" / "model.safetensors"))
    for key, value in expected.items():
        torch.testing.assert_close(resumed[key], value, rtol=0, atol=1e-6, msg=key)


def test_resume_without_checkpoint_is_an_error(
    tmp_path: Path, tiny_bert: Path, data_dir: Path, capsys
) -> None:
    from helpers.data import write_corpus

    recipe = write_recipe(tmp_path, tiny_bert, write_corpus(tmp_path / "c.txt", 40), data_dir)
    assert main(["train", "--config", str(recipe), "--resume"]) == 2
    assert "no checkpoint-<step> folder" in capsys.readouterr().err


def test_bf16_autocast_trains_and_fp16_needs_cuda(
    tmp_path: Path, tiny_bert: Path, data_dir: Path, capsys
) -> None:
    from helpers.data import write_corpus

    corpus = write_corpus(tmp_path / "corpus.txt", 16)
    recipe = write_recipe(tmp_path, tiny_bert, corpus, data_dir, max_steps=2, precision="bf16", device="cpu")
    assert main(["train", "--config", str(recipe)]) == 0
    records = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in records if r["event"] == "train"]
    assert len(losses) == 2 and all(np.isfinite(losses))
    assert main(["train", "--config", str(recipe), "--set", "training.precision=fp16"]) == 2
    assert "fp16 needs a CUDA device" in capsys.readouterr().err
