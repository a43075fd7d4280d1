"""Method-scoped options and the one validation pass: every rule fails before any work, with a clear message."""

from __future__ import annotations

import dataclasses
import itertools
import re
from pathlib import Path

import pytest

from sentcl.cli import main
from sentcl.config import (
    ConfigError,
    ObjectiveConfig,
    TrainConfig,
    changed_settings,
    describe,
    from_dict,
    load_config,
    to_dict,
)
from sentcl.data.readers import DataFormatError
from sentcl.methods import METHODS
from sentcl.training.validation import validate

ROOT = Path(__file__).resolve().parents[2]


def test_objective_is_the_chosen_methods_options() -> None:
    cfg = load_config(TrainConfig, None, ["objective.name=cutoff_triplet", "objective.margin=0.2"])
    assert type(cfg.objective).__name__ == "CutoffTripletOptions" and cfg.objective.margin == 0.2
    assert isinstance(cfg.objective, ObjectiveConfig)
    assert not hasattr(load_config(TrainConfig).objective, "margin")  # unsup_simcse has no margin
    assert type(TrainConfig().objective) is METHODS.build("unsup_simcse").options


def test_foreign_option_lists_the_methods_options() -> None:
    with pytest.raises(ConfigError) as err:
        load_config(TrainConfig, None, ["objective.margin=0.2"])
    assert str(err.value) == (
        "objective.margin is not an option of unsup_simcse (it is an option of cutoff_triplet); its options: "
        "name, temperature, similarity, symmetric, mlm_weight, mlm_probability, mlm_new_head, matryoshka_dims "
        "(from --set objective.margin)"
    )
    with pytest.raises(ConfigError, match=r"objective\.symmetric is not an option of sup_pairs.*temperature"):
        load_config(TrainConfig, None, ["objective.name=sup_pairs", "objective.symmetric=true"])
    with pytest.raises(ConfigError, match=r"objective\.temprature is not an option of .*: name, temperature"):
        load_config(TrainConfig, None, ["objective.temprature=0.1"])


def test_unknown_method_lists_the_methods() -> None:
    with pytest.raises(ConfigError, match=r"objective\.name: unknown method 'simcse'; valid: .*unsup"):
        load_config(TrainConfig, None, ["objective.name=simcse"])


def test_name_override_in_any_order() -> None:
    overrides = [
        "objective.name=sup_simcse",
        "objective.hard_negative_weight=1.5",
        "objective.temperature=0.1",
    ]
    for order in itertools.permutations(overrides):
        cfg = load_config(TrainConfig, None, list(order))
        assert (cfg.objective.name, cfg.objective.hard_negative_weight, cfg.objective.temperature) == (
            "sup_simcse",
            1.5,
            0.1,
        )


def test_switching_a_recipes_method_drops_its_method_settings(tmp_path: Path) -> None:
    recipe = ROOT / "configs" / "cutoff_triplet.yaml"
    cfg = load_config(TrainConfig, recipe, ["objective.name=unsup_simcse"])
    assert cfg.objective.name == "unsup_simcse" and not hasattr(cfg.objective, "triplet_form")
    validate(cfg, environment=False)
    # a foreign option the user sets on the command line is still an error, in either order
    for order in (
        ["objective.margin=0.1", "objective.name=unsup_simcse"],
        ["objective.name=unsup_simcse", "objective.margin=0.1"],
    ):
        with pytest.raises(ConfigError, match="objective.margin is not an option of unsup_simcse"):
            load_config(TrainConfig, recipe, order)
    # and without a switch, the recipe's own method keeps its options
    assert load_config(TrainConfig, recipe).objective.strong_activation == "leaky_relu"


@pytest.mark.parametrize("name", METHODS.names())
def test_every_method_round_trips_through_config_json(name: str) -> None:
    cfg = load_config(TrainConfig, None, [f"objective.name={name}"])
    assert type(cfg.objective) is METHODS.build(name).options
    again = from_dict(TrainConfig, to_dict(cfg))
    assert again == cfg and type(again.objective) is type(cfg.objective)
    assert changed_settings(to_dict(cfg), cfg) == {}


#: config.json's objective section as sentcl wrote it before options were method-scoped (every method's knob)
OLD_OBJECTIVE = {
    "name": "unsup_simcse",
    "temperature": 0.05,
    "hard_negative_weight": 0.0,
    "margin": 0.0,
    "triplet_form": "paper",
    "triplet_weight": 1.0,
    "weak_cutoff": 0.1,
    "strong_cutoff": 0.2,
    "strong_activation": "leaky_relu",
    "context_size": 1,
    "quick_thoughts_reduction": "pairs",
    "quick_thoughts_diagonal": "mask",
    "similarity": "cosine",
    "symmetric": False,
    "mlm_weight": 0.0,
    "mlm_probability": 0.15,
    "mlm_new_head": False,
}


def test_resume_reads_runs_saved_before_method_scoped_options() -> None:
    saved = to_dict(TrainConfig())
    del saved["objective"]  # without the section at all: every key counts as its default
    assert changed_settings(saved, TrainConfig()) == {}
    saved["objective"] = dict(OLD_OBJECTIVE)
    assert changed_settings(saved, TrainConfig()) == {}
    # cutoff_triplet's default temperature is now the token-cutoff triplet note's 0.07: a run saved with the old shared default
    # (0.05) resumes unchanged with its own temperature, and the new default is reported as a change
    old_cutoff = {**saved, "objective": {**OLD_OBJECTIVE, "name": "cutoff_triplet"}}
    cutoff = load_config(TrainConfig, None, ["objective.name=cutoff_triplet", "objective.temperature=0.05"])
    assert changed_settings(old_cutoff, cutoff) == {}
    cutoff = load_config(TrainConfig, None, ["objective.name=cutoff_triplet"])
    assert changed_settings(old_cutoff, cutoff) == {"objective.temperature": (0.05, 0.07)}
    # an old knob that was set to a non-default value is a real change (the run used an option now gone)
    saved["objective"]["margin"] = 0.2
    assert changed_settings(saved, TrainConfig()) == {"objective.margin": (0.2, None)}
    # and a real change of an option the method has is reported
    assert changed_settings(
        to_dict(TrainConfig()), load_config(TrainConfig, None, ["objective.temperature=0.1"])
    ) == {"objective.temperature": (0.05, 0.1)}


def test_describe_lists_each_methods_options() -> None:
    rows = {(key, help_.split("]")[0].lstrip("[")) for key, _, help_ in describe(TrainConfig)}
    assert ("objective.margin", "cutoff_triplet") in rows
    assert ("objective.context_size", "quick_thoughts") in rows
    for name in METHODS.names():
        own = {f.name for f in dataclasses.fields(METHODS.build(name).options)}
        own -= {f.name for f in dataclasses.fields(ObjectiveConfig)}
        assert {(f"objective.{o}", name) for o in own} <= rows
    keys = [key for key, _, _ in describe(TrainConfig)]
    assert keys.count("objective.name") == 1 and "objective.matryoshka_dims" in keys


@pytest.mark.parametrize(
    ("dims", "ok"),
    [([64, 32, 16], True), (None, True), ([32, 32], False), ([16, 32], False), ([8, 0], False), ([], False)],
)
def test_matryoshka_dims_positive_and_strictly_decreasing(dims: list[int] | None, ok: bool) -> None:
    override = f"objective.matryoshka_dims={'null' if dims is None else dims}"
    if ok:
        assert load_config(TrainConfig, None, [override]).objective.matryoshka_dims == dims
    else:
        with pytest.raises(ConfigError, match="matryoshka_dims must be positive and strictly decreasing"):
            load_config(TrainConfig, None, [override])


# ------------------------------------------------------------------ cross-section rules: before any work


def _write_pairs(path: Path) -> Path:
    path.write_text(
        "a man plays\ta man is playing\t4.5\na dog\ta cat\t1.0\nthe sun\tthe moon\t2\n", encoding="utf-8"
    )
    return path


RULES = [
    (
        ["objective.name=sup_simcse", "data.streaming=true"],
        ConfigError,
        "data.streaming reads plain text files",
    ),
    (
        ["objective.name=sup_simcse", "data.use_neutral=true", "data.reader=pairs"],
        ConfigError,
        "needs an NLI reader",
    ),
    (
        ["objective.name=cutoff_triplet", "model.pooler=avg"],
        ConfigError,
        "cutoff_triplet needs model.pooler=cls",
    ),
    (
        ["objective.name=cutoff_triplet", "objective.strong_cutoff=0.1"],
        ConfigError,
        "strong_cutoff > weak_cutoff",
    ),
    (["model.same_dropout_mask=true", "data.augmentation=crop"], ConfigError, "excludes augmentations"),
    (
        ["model.two_encoders=true", "model.same_dropout_mask=true"],
        ConfigError,
        "excludes model.same_dropout_mask",
    ),
    (
        ["model.two_encoders=true", "data.token_augmentation=feature_cutoff"],
        ConfigError,
        "feature augmentations",
    ),
    (["model.dual_embedding=concat"], ConfigError, "needs model.two_encoders=true"),
    (
        ["data.use_neutral=true"],
        ConfigError,
        r"data\.use_neutral=True is ignored by unsup_simcse; it is used by sup",
    ),
    (["objective.name=sup_simcse", "model.same_dropout_mask=true"], ConfigError, "used by unsup_simcse"),
    (["data.next_sentence_window=3"], ConfigError, "ignored by unsup_simcse; it is used by next_sentence"),
    (["objective.name=quick_thoughts", "data.cutoff_token=pad"], ConfigError, "used by .*cutoff_triplet"),
    (["data.augmentation=bogus"], ConfigError, "data.augmentation='bogus' is not valid"),
    (["data.token_augmentation=bogus"], ConfigError, "data.token_augmentation='bogus' is not valid"),
    (["data.reader=bogus"], ConfigError, "data.reader='bogus' is not a reader"),
    (["eval.final_tasks=[sts, nope]"], ConfigError, "eval.final_tasks: unknown evaluation task"),
    (["eval.dev_task=pairs:/nonexistent/dev.tsv"], FileNotFoundError, "dev.tsv"),
    (["data.train_file=/nonexistent/train.txt"], FileNotFoundError, "train.txt"),
    (["training.precision=fp16", "training.device=cpu"], ConfigError, "fp16 needs a CUDA device"),
]


@pytest.mark.parametrize(("overrides", "error", "message"), RULES, ids=lambda x: str(x)[:60])
def test_each_rule_fails_before_any_work(
    overrides: list[str],
    error: type[Exception],
    message: str,
    tmp_path: Path,
    data_dir: Path,
    corpus_file: Path,
) -> None:
    out = tmp_path / "run"
    base = [f"data.data_dir={data_dir}", f"data.train_file={corpus_file}", f"training.output_dir={out}"]
    try:
        cfg = load_config(TrainConfig, None, [*base, *overrides])
    except ConfigError as err:  # a rule inside one section fails while parsing: earlier still
        assert error is ConfigError and re.search(message, str(err))
        return
    with pytest.raises(error, match=message):
        validate(cfg)
    # the training command stops on the same rule: one line, exit status 2, and no run folder
    args = ["train", "--data-dir", str(data_dir)]
    for override in [*base, *overrides]:
        args += ["--set", override]
    assert main(args) == 2
    assert not out.exists()


def test_a_valid_config_passes(tmp_path: Path, data_dir: Path, corpus_file: Path) -> None:
    dev = _write_pairs(tmp_path / "dev.tsv")
    cfg = load_config(
        TrainConfig,
        None,
        [f"data.data_dir={data_dir}", f"data.train_file={corpus_file}", f"eval.dev_task=pairs:{dev}"],
    )
    validate(cfg)


def test_a_malformed_dev_task_file_fails_in_validation_not_at_the_first_evaluation(
    tmp_path: Path, data_dir: Path, corpus_file: Path
) -> None:
    dev = tmp_path / "dev.tsv"
    dev.write_text("a man plays\ta man is playing\t4.5\na dog\ta cat\tmany\n", encoding="utf-8")
    cfg = load_config(
        TrainConfig,
        None,
        [f"data.data_dir={data_dir}", f"data.train_file={corpus_file}", f"eval.dev_task=pairs:{dev}"],
    )
    with pytest.raises(DataFormatError, match=rf"{re.escape(str(dev))}:2: score 'many' is not a number"):
        validate(cfg)


def test_a_grid_point_that_switches_the_method_gets_that_methods_options() -> None:
    from sentcl.experiments.grid import load_grid, point_configs

    spec = load_grid(ROOT / "configs" / "experiments" / "objectives.yaml")
    cfgs = {p.name: c for p, c in point_configs(spec, "cpu")}
    qt = cfgs["Quick-Thoughts (f, g)"]  # the base recipe is unsup_simcse's (temperature 0.05)
    assert type(qt.objective) is METHODS.build("quick_thoughts").options and qt.objective.context_size == 1
    assert not hasattr(qt.objective, "temperature") and qt.model.two_encoders
    assert cfgs["next 3 sentences (f)"].data.next_sentence_window == 3
    assert type(cfgs["unsup. SimCSE (f)"].objective) is METHODS.build("unsup_simcse").options


def test_switching_method_drops_the_recipes_method_scoped_settings(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"  # no objective section: unsup_simcse's recipe
    recipe.write_text("model: {same_dropout_mask: true, dropout: 0.1}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="same_dropout_mask=True is ignored by sup_simcse"):
        validate(
            load_config(TrainConfig, None, ["model.same_dropout_mask=true", "objective.name=sup_simcse"])
        )
    cfg = load_config(TrainConfig, recipe, ["objective.name=sup_simcse"])
    assert cfg.model.same_dropout_mask is False and cfg.model.dropout == 0.1  # other settings stay
    validate(cfg, environment=False)
