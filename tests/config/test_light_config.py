"""Reading and validating a recipe imports neither torch nor transformers: checked in a fresh
interpreter, for the demo recipe and for every recipe in configs/, with the --help rows of ``sentcl train``."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sentcl.config.method_catalogue import option_classes

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import glob, json, sys
from sentcl.config import TrainConfig, describe, load_config
from sentcl.training.validation import validate
checked = []
for path in ["configs/demo.yaml", *sorted(glob.glob("configs/*.yaml"))]:
    cfg = load_config(TrainConfig, path, ["training.seed=7"])
    validate(cfg, environment=False)
    checked.append([path, cfg.objective.name, type(cfg.objective).__name__])
rows = [key for key, _, _ in describe(TrainConfig)]
heavy = sorted(m for m in ("torch", "transformers", "sentence_transformers", "scipy") if m in sys.modules)
print(json.dumps({"checked": checked, "rows": rows, "heavy": heavy}))
"""


def test_recipes_load_and_validate_without_torch() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["heavy"] == [], f"reading a recipe imported {report['heavy']}"
    paths = [path for path, _, _ in report["checked"]]
    assert paths[0] == "configs/demo.yaml" and len(paths) == 1 + len(list((ROOT / "configs").glob("*.yaml")))
    # each recipe's objective section was built as its own method's options class (not a generic one)
    demo = report["checked"][0]
    assert demo[1:] == ["unsup_simcse", "UnsupSimCSEOptions"]
    assert {name for _, name, _ in report["checked"]} >= {"promptbert", "sncse", "cosent", "quick_thoughts"}
    # the --help rows name every option of every method, read without torch
    options = {f"objective.{f.name}" for c in option_classes().values() for f in dataclasses.fields(c)}
    assert options <= set(report["rows"])


@pytest.mark.slow
def test_the_probe_would_see_torch() -> None:
    """The check can fail: the same probe after importing the training loop reports torch."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    probe = "import sentcl.training.loop\n" + PROBE
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert "torch" in json.loads(out.stdout.strip().splitlines()[-1])["heavy"]
