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


def test_the_table_shows_the_start_model_in_its_own_pooling(
    tmp_path: Path,
    tiny_bert: Path,
    corpus_file: Path,
    data_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run that pools a sentence encoder otherwise (here [CLS] on a sentence-transformers folder with mean
    pooling) prints the start model in its own pooling beside the result; the number is what evaluating the
    folder as sentence-transformers pools it gives, and it is evaluated once a run folder."""
    import yaml

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "modeling"))
    from modeling_folders import st_folder

    from sentcl.cli import main
    from sentcl.evaluation.embedding import evaluation_encode_fn
    from sentcl.evaluation.runner import evaluate, headline
    from sentcl.modeling.open import open_model

    folder = st_folder(tmp_path / "st", tiny_bert, "mean", [], normalize=False)
    recipe = {
        "model": {"name_or_path": str(folder), "pooler": "cls", "mlp_only_train": True},
        "data": {"data_dir": str(data_dir), "train_file": str(corpus_file)},
        "training": {"output_dir": str(tmp_path / "run"), "batch_size": 8, "max_steps": 1, "eval_steps": 1},
        "eval": {"dev_task": "stsb_dev", "final_tasks": ["stsb_dev"], "compare_with_start": True},
    }
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(recipe), encoding="utf-8")
    assert main(["train", "--config", str(tmp_path / "r.yaml")]) == 0
    table = capsys.readouterr().out
    header = next(line for line in table.splitlines() if line.startswith("| Task"))
    assert header == "| Task | start model, own pooling (avg) | start model, cls | trained |", table
    saved = json.loads((tmp_path / "run" / "start_own_pooling.json").read_text())
    own = open_model(str(folder))  # sentence-transformers' Pooling: mean
    want = evaluate(evaluation_encode_fn(own), data_dir, ["stsb_dev"], progress=False)
    assert saved["pooler"] == "avg"
    assert headline("stsb_dev", saved["results"]["stsb_dev"]) == pytest.approx(
        headline("stsb_dev", want["stsb_dev"]), abs=1e-6
    )
    row = next(line for line in table.splitlines() if line.startswith("| STS-B dev"))
    assert f"{headline('stsb_dev', want['stsb_dev']):.2f}" == row.split("|")[2].strip()
    # sentcl report of the run folder: the same three columns, named after the run, from the saved files
    args = [
        "report",
        str(tmp_path / "run"),
        "--output",
        str(tmp_path / "report"),
        "--data-dir",
        str(data_dir),
    ]
    assert main([*args, "--eval-tasks", "stsb_dev"]) == 0
    page = (tmp_path / "report" / "report.md").read_text(encoding="utf-8").splitlines()
    dev = page.index("## STS dev (Spearman x 100)")
    assert page[dev + 2] == (
        "| Task | run: start model, own pooling (avg) | run: start model, cls | run |"
    ), page[dev:]
    assert (
        next(line for line in page[dev:] if line.startswith("| STS-B")).split("|")[2:5] == row.split("|")[2:5]
    )
