"""DiffCSE through ``sentcl train`` on a tiny random BERT and a tiny random masked-LM generator: the run logs the
RTD term, the discriminator lives in the training state and not in the model folder, resume is exact; and the
config errors of ``model.generator``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file
from transformers import AutoTokenizer

from sentcl.cli import main
from sentcl.config import ConfigError, TrainConfig, load_config
from sentcl.training.validation import validate

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.fixture(scope="module")
def tiny_mlm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from helpers.tiny_bert import build_tiny_mlm

    return build_tiny_mlm(tmp_path_factory.mktemp("tiny_mlm"))


def write_recipe(tmp: Path, tiny_bert: Path, generator: Path, data_dir: Path, corpus: Path) -> Path:
    from helpers.data import tiny_recipe

    recipe = tiny_recipe(tiny_bert, data_dir, corpus, tmp / "run")
    recipe["model"]["generator"] = str(generator)
    recipe["objective"] = {"name": "diffcse", "temperature": 0.05, "lambda_weight": 0.5}
    path = tmp / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def diffcse_run(tmp_path_factory, tiny_bert: Path, tiny_mlm: Path, data_dir: Path) -> Path:
    from helpers.data import write_corpus

    tmp = tmp_path_factory.mktemp("diffcse_run")
    corpus = write_corpus(tmp / "corpus.txt", 40)
    assert main(["train", "--config", str(write_recipe(tmp, tiny_bert, tiny_mlm, data_dir, corpus))]) == 0
    return tmp


def test_run_logs_rtd_and_keeps_the_discriminator_out_of_the_model(
    diffcse_run: Path, tiny_bert: Path
) -> None:
    run = diffcse_run / "run"
    records = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if r["event"] == "train"]
    assert [r["step"] for r in train] == [1, 2, 3, 4]
    assert all(r["rtd"] > 0 and r["loss"] > 0 for r in train)
    state = torch.load(run / "checkpoint-4" / "training_state.pt", weights_only=False)
    keys = state["model"].keys()
    assert any(k.startswith("discriminator.backbone.") for k in keys)
    assert {"discriminator.head.weight", "discriminator.head.bias"} <= set(keys)
    # D was trained: its copy of the backbone moved away from the start weights
    start = load_file(str(tiny_bert / "model.safetensors"))
    name = next(k for k in start if "encoder.layer.0.attention" in k and k.endswith("weight"))
    assert not torch.allclose(state["model"][f"discriminator.backbone.{name}"], start[name])
    saved = load_file(str(run / "best" / "model.safetensors"))
    assert set(saved) <= set(start), "the model folder holds a plain backbone, no discriminator"
    assert not any("discriminator" in p.name for p in (run / "best").iterdir())


def test_resume_after_a_kill_is_exact(
    diffcse_run: Path, tmp_path: Path, tiny_bert, tiny_mlm, data_dir
) -> None:
    recipe = write_recipe(tmp_path, tiny_bert, tiny_mlm, data_dir, diffcse_run / "corpus.txt")
    shutil.copytree(diffcse_run / "run", tmp_path / "run")
    shutil.rmtree(tmp_path / "run" / "checkpoint-4")  # as if the job died after step 2's checkpoint
    assert main(["train", "--config", str(recipe), "--resume"]) == 0
    expected = torch.load(diffcse_run / "run" / "checkpoint-4" / "training_state.pt", weights_only=False)
    resumed = torch.load(tmp_path / "run" / "checkpoint-4" / "training_state.pt", weights_only=False)
    assert expected["model"].keys() == resumed["model"].keys()
    for key, value in expected["model"].items():  # the encoder and the discriminator
        torch.testing.assert_close(resumed["model"][key], value, rtol=0, atol=1e-6, msg=key)
    records = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    first = {r["step"]: r["rtd"] for r in records[: len(records) // 2] if r["event"] == "train"}
    after = [r for r in records[records.index(next(r for r in records if r["event"] == "resume")) :]]
    again = {r["step"]: r["rtd"] for r in after if r["event"] == "train"}
    assert set(again) == {3, 4} and all(again[s] == pytest.approx(first[s], rel=1e-6) for s in again)


def cfg_with(*overrides: str) -> TrainConfig:
    return load_config(TrainConfig, CONFIGS / "diffcse.yaml", list(overrides))


def test_diffcse_needs_a_generator_and_others_refuse_one(data_dir: Path) -> None:
    with pytest.raises(ConfigError, match="diffcse needs model.generator"):
        validate(cfg_with("model.generator=null"), environment=False)
    other = load_config(TrainConfig, CONFIGS / "esimcse.yaml", ["model.generator=some/mlm"])
    with pytest.raises(ConfigError, match=r"model.generator=.*ignored by esimcse.*used by diffcse"):
        validate(other, environment=False)
    with pytest.raises(ConfigError, match="mlm_weight=0"):
        validate(cfg_with("objective.mlm_weight=0.1"), environment=False)
    with pytest.raises(ConfigError, match="gradient_cache_chunk"):
        validate(
            cfg_with("objective.rtd_positions=padded", "training.gradient_cache_chunk=8"), environment=False
        )
    with pytest.raises(ConfigError, match="objective.edit_positions"):
        cfg_with("objective.edit_positions=some")
    with pytest.raises(ConfigError, match="objective.masking_ratio"):
        cfg_with("objective.masking_ratio=0")
    validate(cfg_with(), environment=False)
    validate(load_config(TrainConfig, CONFIGS / "diffcse_bert_base.yaml"), environment=False)


def train_with_generator(tmp_path: Path, tiny_bert: Path, generator: str, data_dir: Path) -> int:
    from helpers.data import write_corpus

    tmp_path.mkdir(parents=True, exist_ok=True)
    corpus = write_corpus(tmp_path / "corpus.txt", 40)
    recipe = write_recipe(tmp_path, tiny_bert, Path(generator), data_dir, corpus)
    return main(["train", "--config", str(recipe)])


def test_generator_errors_name_the_problem(tmp_path: Path, tiny_bert: Path, data_dir: Path, capsys) -> None:
    from helpers.tiny_bert import build_tiny_mlm

    # a plain BertModel folder: no masked-LM head
    assert train_with_generator(tmp_path / "a", tiny_bert, str(tiny_bert), data_dir) != 0
    assert "has no masked-LM head weights" in capsys.readouterr().err
    wrong = build_tiny_mlm(tmp_path / "wrong_vocab", vocab_size=100)
    assert train_with_generator(tmp_path / "b", tiny_bert, str(wrong), data_dir) != 0
    err = capsys.readouterr().err
    size = len(AutoTokenizer.from_pretrained(str(tiny_bert)))
    assert f"vocabulary of 100 tokens and the encoder's tokenizer {size}" in err
    shuffled = build_tiny_mlm(tmp_path / "reordered_vocab", tokenizer_order="reversed")
    assert train_with_generator(tmp_path / "d", tiny_bert, str(shuffled), data_dir) != 0
    assert "tokens differ" in capsys.readouterr().err
    missing = tmp_path / "no_such_generator"
    assert train_with_generator(tmp_path / "c", tiny_bert, str(missing), data_dir) != 0
    err = capsys.readouterr().err
    assert "model.generator" in err and "could not load model" in err
