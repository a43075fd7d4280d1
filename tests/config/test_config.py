"""Typed configs: YAML + overrides, and clear errors for unknown keys and bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentcl.config import ConfigError, TrainConfig, describe, load_config

ROOT = Path(__file__).resolve().parents[2]


def test_yaml_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("model:\n  pooler: avg\ntraining:\n  batch_size: 16\n", encoding="utf-8")
    cfg = load_config(
        TrainConfig, path, ["training.batch_size=8", "objective.temperature=0.1", "model.dropout=null"]
    )
    assert cfg.model.pooler == "avg"
    assert cfg.training.batch_size == 8
    assert cfg.objective.temperature == 0.1
    assert cfg.model.dropout is None
    assert cfg.training.learning_rate == 3e-5  # the paper's default stays
    # an int where a float is expected is accepted as float
    assert isinstance(
        load_config(TrainConfig, None, ["training.learning_rate=1"]).training.learning_rate, float
    )


def test_unknown_key_lists_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown config key 'training\.batchsize'.*batch_size"):
        load_config(TrainConfig, None, ["training.batchsize=3"])
    with pytest.raises(
        ConfigError, match=r"unknown config key 'trainer'.*model, data, objective, training, eval"
    ):
        load_config(TrainConfig, None, ["trainer.x=1"])


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("training.batch_size=0", "training.batch_size must be positive"),
        ("training.batch_size=-4", "training.batch_size must be positive"),
        ("objective.temperature=0", "objective.temperature must be positive"),
        ("objective.temperature=-0.05", "objective.temperature must be positive"),
        ("model.pooler=max", "model.pooler='max' is not valid; choose one of: cls, cls_before_pooler, avg"),
        ("model.dropout=1.5", r"model.dropout must be in \[0, 1\)"),
        ("training.batch_size=abc", "training.batch_size='abc' has the wrong type; expected int"),
    ],
)
def test_bad_values(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(TrainConfig, None, [override])


def test_bad_yaml_names_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("training: [1, 2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=str(path)):
        load_config(TrainConfig, path)
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(TrainConfig, tmp_path / "missing.yaml")


@pytest.mark.parametrize("recipe", sorted((ROOT / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_recipes_load(recipe: Path) -> None:
    load_config(TrainConfig, recipe)


def test_every_field_has_help() -> None:
    for key, _, help_ in describe(TrainConfig):
        assert help_, f"config key {key} has no help line"
