"""Every CPU recipe in configs/ trains a few steps on the tiny random BERT, saves, and reloads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sentcl.cli import main
from sentcl.config import TrainConfig, load_config
from sentcl.experiments.grid import load_grid, point_configs
from sentcl.methods import METHODS
from sentcl.modeling.dual import DualEncoder
from sentcl.modeling.open import load_encoder
from sentcl.training.validation import validate

ROOT = Path(__file__).resolve().parents[2]
CPU_RECIPES = sorted(
    p for p in (ROOT / "configs").glob("*.yaml") if "all-MiniLM-L6-v2" in p.read_text(encoding="utf-8")
)


def write_nli_rows() -> list[tuple[str, str, str]]:
    return [
        ("a man plays a guitar", "a man plays music", "a woman eats"),
        ("the dog runs near the river", "a dog is running", "the cat sits"),
        ("the stock price falls", "a price falls", "the market rises"),
        ("a child reads a book", "a child is reading", "nobody is reading"),
        ("the old car is on the road", "a car is on the road", "the road is empty"),
        ("a bird sits in the tree", "a bird is in a tree", "the tree has no birds"),
    ]


def write_nli_csv(path: Path) -> Path:
    rows = write_nli_rows()
    path.write_text("sent0,sent1,hard_neg\n" + "\n".join(",".join(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_there_are_cpu_recipes_for_every_method() -> None:
    names = {p.stem for p in CPU_RECIPES}
    assert {
        "demo",
        "sup_simcse_snli",
        "dropout_fixed",
        "augment_crop",
        "consert_token_cutoff",
        "next_sentence",
        "quick_thoughts",
        "cutoff_triplet",
        "unsup_mlm",
    } <= names


#: recipes whose run took over 10 s in make test-fast's durations (docs/guides/development.md, "Tests mirror the packages"): make test runs them
SLOW_RECIPES = {"quick_thoughts", "promptbert"}


@pytest.mark.parametrize(
    "recipe",
    [pytest.param(p, marks=pytest.mark.slow) if p.stem in SLOW_RECIPES else p for p in CPU_RECIPES],
    ids=lambda p: p.stem,
)
def test_recipe_runs_and_saves(
    recipe: Path, tmp_path: Path, tiny_bert: Path, corpus_file: Path, data_dir: Path
) -> None:
    text = recipe.read_text(encoding="utf-8")
    train_file = write_nli_csv(tmp_path / "nli.csv") if "name: sup_simcse" in text else corpus_file
    overrides = [
        f"model.name_or_path={tiny_bert}",
        f"data.train_file={train_file}",
        "training.batch_size=4",
        "training.max_steps=2",
        "training.eval_steps=2",
        "training.log_steps=1",
        "training.save_steps=0",
        "training.progress=false",
        "eval.final_tasks=[stsb_dev]",
        "eval.compare_with_start=false",
        f"training.output_dir={tmp_path / 'run'}",
    ]
    if "name: sup_simcse" in text:
        overrides.append("data.reader=nli_csv")
    if "reader: offline_english" in text:  # the recipe reads the data folder; here the small corpus file
        overrides.append("data.reader=lines")
    if "name: cosent" in text:  # scored pairs (sentence1, sentence2, score) written by hand
        rows = [(r[0], r[1], float(i % 5)) for i, r in enumerate(write_nli_rows())]
        scored = tmp_path / "scored.tsv"
        scored.write_text("".join(f"{a}\t{b}\t{s}\n" for a, b, s in rows), encoding="utf-8")
        overrides[1] = f"data.train_file={scored}"
        overrides.append("data.reader=scored_pairs")
    if "student_layers" in text:  # the tiny BERT has 2 layers
        overrides.append("model.student_layers=[0, 1]")
    if "name: diffcse" in text:  # a tiny random masked-LM with the tiny BERT's vocabulary as the generator
        from helpers.tiny_bert import build_tiny_mlm

        overrides.append(f"model.generator={build_tiny_mlm(tmp_path / 'generator')}")
    if "matryoshka_dims" in text:  # the tiny BERT is 32 wide
        overrides.append("objective.matryoshka_dims=[32,16,8]")
    args = ["train", "--config", str(recipe), "--data-dir", str(data_dir)]
    for override in overrides:
        args += ["--set", override]
    assert main(args) == 0
    run = tmp_path / "run"
    assert (run / "checkpoint-2" / "training_state.pt").is_file()
    records = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in records if r["event"] == "train"]
    assert len(losses) == 2 and all(np.isfinite(losses))
    model = load_encoder(str(run / "best"))
    emb = model.encode(["a dog runs", "music"])
    dim = 64 if "dual_embedding: concat" in text else 32
    assert emb.shape == (2, dim) and np.isfinite(emb).all()
    assert isinstance(model, DualEncoder) == ("two_encoders: true" in text)
    if "mlm_weight: 0.1" in text:
        assert all("mlm" in r for r in records if r["event"] == "train")


@pytest.mark.parametrize("recipe", sorted((ROOT / "configs").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_recipe_validates(recipe: Path, data_dir: Path) -> None:
    """Every config rule holds (GPU recipes: the rules that do not depend on this machine)."""
    cfg = load_config(TrainConfig, recipe, [f"data.data_dir={data_dir}"])
    validate(cfg, environment=recipe in CPU_RECIPES)


@pytest.mark.parametrize(
    "grid", sorted((ROOT / "configs" / "experiments").glob("*.yaml")), ids=lambda p: p.stem
)
def test_every_grid_point_validates(grid: Path) -> None:
    """Each point of each variant gets its own method's options (a point may switch objective.name)."""
    spec = load_grid(grid)
    for variant in spec.variants:
        for point, cfg in point_configs(
            spec, variant
        ):  # point_configs runs sentcl.training.validation.validate
            validate(cfg, environment=False)
            assert type(cfg.objective) is METHODS.build(cfg.objective.name).options, point.name
