"""The SimCSE paper's GPU recipes carry Table B.1's batch size and learning rate, and fp16 like the reference."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentcl.config import TrainConfig, load_config

CONFIGS = Path(__file__).resolve().parents[2] / "configs"

# Table B.1 of Gao et al. 2021 (and the official README's hyperparameter table), typed in here by hand
TABLE_B1 = {
    "unsup_simcse_bert_base": ("bert-base-uncased", 64, 3e-5),
    "unsup_simcse_roberta_base": ("roberta-base", 512, 1e-5),
    "unsup_simcse_bert_large": ("bert-large-uncased", 64, 1e-5),
    "unsup_simcse_roberta_large": ("roberta-large", 512, 3e-5),
    "sup_simcse_bert_base": ("bert-base-uncased", 512, 5e-5),
    "sup_simcse_roberta_base": ("roberta-base", 512, 5e-5),
    "sup_simcse_bert_large": ("bert-large-uncased", 512, 1e-5),
    "sup_simcse_roberta_large": ("roberta-large", 512, 1e-5),
}


@pytest.mark.parametrize("name", sorted(TABLE_B1))
def test_recipe_matches_table_b1(name: str) -> None:
    cfg = load_config(TrainConfig, CONFIGS / f"{name}.yaml")
    model, batch, lr = TABLE_B1[name]
    assert (cfg.model.name_or_path, cfg.training.batch_size, cfg.training.learning_rate) == (model, batch, lr)
    assert cfg.training.precision == "fp16" and cfg.objective.temperature == 0.05
    assert cfg.model.max_length == 32 and cfg.training.eval_steps == 125
    unsup = name.startswith("unsup")
    assert cfg.objective.name == ("unsup_simcse" if unsup else "sup_simcse")
    assert cfg.training.epochs == (1 if unsup else 3)
    assert cfg.model.mlp_only_train is unsup  # unsup: MLP in training only; sup: train and test
