"""``eval.compare_with_start``: the starting model's results are written once, as strict JSON, and read back."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sentcl.config import TrainConfig
from sentcl.training import evaluation_hooks


def _strict(text: str) -> Any:
    def reject(constant: str) -> None:
        raise AssertionError(f"bare {constant} in strict JSON")

    return json.loads(text, parse_constant=reject)


def test_start_results_are_strict_json_written_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = TrainConfig()
    cfg.eval.compare_with_start, cfg.eval.final_tasks = True, ["stsb_dev"]
    calls: list[list[str]] = []

    def fake_evaluate(encode: Any, data_dir: Path, tasks: list[str], **kw: Any) -> dict[str, Any]:
        calls.append(list(tasks))
        return {"stsb_dev": {"spearman": float("nan"), "pearson": 12.5, "n": 3}}  # a collapsed start model

    monkeypatch.setattr(evaluation_hooks, "evaluate", fake_evaluate)
    run = SimpleNamespace(cfg=cfg, out=tmp_path, main=True, data_dir=tmp_path)
    first = evaluation_hooks.Evaluations(run, model=None, train_examples=0).start_results()  # type: ignore[arg-type]
    assert first is not None and math.isnan(first["stsb_dev"]["spearman"])
    written = _strict((tmp_path / "start_results.json").read_text(encoding="utf-8"))
    assert written == {"stsb_dev": {"spearman": None, "pearson": 12.5, "n": 3}}
    assert not list(tmp_path.glob(".tmp-*")), "written atomically: no temporary file left"

    again = evaluation_hooks.Evaluations(run, model=None, train_examples=0).start_results()  # type: ignore[arg-type]
    assert again == written and len(calls) == 1, "a resumed run reads the file instead of evaluating again"
