"""sentcl's one YAML dialect (``sentcl.files.yaml_dialect`` through ``sentcl.files.read.load_yaml_text``): the
YAML 1.2 core schema, checked against ruamel.yaml's YAML 1.2 reader, and the refusal of the plain scalars that
YAML 1.1 (PyYAML's safe_load) reads as another value, naming the key; for recipes, grids and ``--set`` alike."""

from __future__ import annotations

import math
import string
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from sentcl.config import ConfigError, TrainConfig, load_config
from sentcl.config.builtin import resolve_recipe
from sentcl.files.read import load_yaml_text

_RUAMEL = YAML(typ="safe", pure=True)  # YAML 1.2 by default


def _demo(overrides: list[str]) -> TrainConfig:
    return load_config(TrainConfig, resolve_recipe("demo"), overrides)


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0o10", 8),
        ("0x1F", 31),
        ("1e-30", 1e-30),  # YAML 1.1 needs a dot: PyYAML reads the string "1e-30"
        ("-.inf", -math.inf),
        ("TRUE", True),
        ("'010'", "010"),
        ('"yes"', "yes"),
    ],
)
def test_core_schema_values_match_a_yaml_12_reader(text: str, value: object) -> None:
    got = load_yaml_text(f"k: {text}", "doc")["k"]
    assert _same(got, value)
    assert _same(got, _RUAMEL.load(f"k: {text}")["k"])


def test_a_date_stays_text_as_the_core_schema_has_no_date_type() -> None:
    assert load_yaml_text("k: 2024-01-01", "doc") == {"k": "2024-01-01"}  # ruamel and PyYAML add a date type
    assert type(yaml.safe_load("k: 2024-01-01")["k"]).__name__ == "date"  # what sentcl does not do


@pytest.mark.parametrize(
    ("text", "old"),
    [("010", "8"), ("1:30", "90"), ("yes", "True"), ("off", "False"), ("0b101", "5"), ("1_000", "1000")],
)
def test_scalars_yaml_11_reads_otherwise_are_refused_naming_key_and_line(text: str, old: str) -> None:
    with pytest.raises(ValueError) as err:
        load_yaml_text(f"training:\n  output_dir: runs/x\n  seed: {text}\n", "recipe r.yaml")
    message = str(err.value)
    assert message.startswith("recipe r.yaml: line 3: training.seed: ")
    assert f"is {old} in YAML 1.1" in message


def test_set_seed_010_is_refused_not_run_as_seed_8() -> None:
    """Reliability row CF_set_octal: ``--set training.seed=010`` ran with seed 8."""
    with pytest.raises(ConfigError, match=r"--set training.seed: '010' is 8 in YAML 1.1 but 10 in YAML 1.2"):
        _demo(["training.seed=010"])
    assert _demo(["training.seed=10"]).training.seed == 10
    assert _demo(["training.seed=0o10"]).training.seed == 8


def test_set_seed_1_30_is_refused_not_run_as_seed_90() -> None:
    """Reliability row CF_set_sexagesimal: ``--set training.seed=1:30`` ran with seed 90."""
    with pytest.raises(ConfigError, match=r"--set training.seed: '1:30' is 90 in YAML 1.1"):
        _demo(["training.seed=1:30"])


def test_recipe_file_with_yes_boolean_names_file_and_key(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("method: unsup_simcse\ntraining:\n  progress: no\n")
    with pytest.raises(ConfigError) as err:
        load_config(TrainConfig, recipe)
    assert str(recipe) in str(err.value)
    assert "line 3: training.progress: 'no' is False in YAML 1.1" in str(err.value)


def test_grid_file_with_octal_value_is_refused(tmp_path: Path) -> None:
    from sentcl.experiments.grid import load_grid

    grid = tmp_path / "g.yaml"
    grid.write_text("base: demo\nvary:\n  training.seed: [1, 010]\n")
    with pytest.raises(ConfigError, match=r"line 3: vary.training.seed\[1\]: '010' is 8 in YAML 1.1"):
        load_grid(grid)


_SCALAR_CHARS = string.digits + "+-._:oxXbeEinfaINFtrueFALSyesnoNOY~ "
_scalars = st.text(_SCALAR_CHARS, min_size=1, max_size=8).filter(lambda s: s.strip() == s)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(_scalars)
def test_any_plain_scalar_is_read_as_yaml_12_or_refused_as_ambiguous(text: str) -> None:
    """Random plain scalars made of the characters that decide a scalar's type: the value is YAML 1.2's (a
    YAML 1.2 reader, ruamel's, agrees), or the scalar is refused because YAML 1.1 reads another value."""
    doc = f"k: {text}\n"
    try:
        reference = _RUAMEL.load(doc)
    except Exception:  # noqa: BLE001 - text that is not a plain scalar YAML 1.2 can read: not this test's case
        return
    if not isinstance(reference, dict) or "k" not in reference:
        return
    try:
        old = yaml.safe_load(doc)["k"]
    except yaml.YAMLError:
        return
    try:
        got = load_yaml_text(doc, "doc")["k"]
    except ValueError as err:
        assert "in YAML 1.1 but" in str(err) and "doc: line 1: k: " in str(err)
        assert isinstance(old, bool | int | float)  # YAML 1.1 read a boolean or a number ...
        ruamel_extension = "_" in text or ":" in text
        assert ruamel_extension or not _same(old, reference["k"])  # ... that YAML 1.2 does not
        return
    if _same(got, reference["k"]):
        return
    # ruamel extends YAML 1.2 with YAML 1.1's digit underscores and base 60 ("0_E0" is its 0.0); the core
    # schema reads those as text, so only they may differ from ruamel's value
    assert isinstance(got, str) and ("_" in text or ":" in text), (text, got, reference["k"])


def test_an_error_in_a_set_value_names_the_set_not_the_recipe_ts_weight0() -> None:
    """Reliability row TS_weight0: a bad value given with --set was reported '(in <sentcl>/recipes/distill_mse.yaml)',
    a file that holds no such value."""
    recipe = resolve_recipe("distill_mse")
    with pytest.raises(ConfigError) as err:
        load_config(TrainConfig, recipe, ["model.teacher=[{path: all-MiniLM-L6-v2, weight: 0}]"])
    assert "model.teacher" in str(err.value) and str(err.value).endswith("(from --set model.teacher)")
    assert str(recipe) not in str(err.value)


def test_an_error_in_the_recipe_still_names_the_recipe(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("training:\n  learning_rate: .nan\n")
    with pytest.raises(ConfigError) as err:
        load_config(TrainConfig, recipe, ["training.seed=3"])
    assert str(err.value).endswith(f"(in {recipe})")
