"""A grid page's extra metrics (``also``), ``once`` points, evaluate-only points (``postprocess: {method:
none}``), targets and side tables: run through ``sentcl experiment`` on a tiny model, every number on the page
checked against one computed here (scipy's Spearman on the model's own vectors, the mean and sd of the
results files, the ratio and difference by hand), and the page rebuilt from its summaries alone."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers.data import write_corpus, write_small_sts
from scipy.stats import spearmanr

from sentcl.cli import main
from sentcl.config import ConfigError
from sentcl.experiments.grid import load_grid
from sentcl.modeling import SentenceEncoder


def spearman_of(model: Path, data: Path, split: str) -> float:
    """STS-B ``split`` Spearman x 100 of the model's avg-pooled vectors, computed here."""
    encoder = SentenceEncoder.from_pretrained(str(model), pooler="avg")
    rows = [
        line.split("\t")
        for line in (data / f"senteval/STS/STSBenchmark/sts-{split}.csv").read_text().splitlines()
    ]
    a, b = encoder.encode([r[5] for r in rows]), encoder.encode([r[6] for r in rows])
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return 100 * spearmanr(cos, [float(r[4]) for r in rows]).statistic


def bare_student_spearman(model: Path, data: Path, layer: int) -> float:
    """STS-B dev Spearman x 100 of transformers' own BertModel with only layer ``layer`` kept, mean-pooled by
    hand: the independent reference of an evaluate-only point with ``model.student_layers``."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer, bert = AutoTokenizer.from_pretrained(str(model)), AutoModel.from_pretrained(str(model)).eval()
    bert.encoder.layer = torch.nn.ModuleList([bert.encoder.layer[layer]])
    rows = [
        line.split("\t") for line in (data / "senteval/STS/STSBenchmark/sts-dev.csv").read_text().splitlines()
    ]

    def embed(texts: list[str]) -> np.ndarray:
        batch = tokenizer(texts, padding=True, return_tensors="pt")
        with torch.no_grad():
            hidden = bert(**batch).last_hidden_state  # (N, L, H)
        mask = batch["attention_mask"].unsqueeze(-1).float()  # (N, L, 1)
        return ((hidden * mask).sum(1) / mask.sum(1)).numpy()

    a, b = embed([r[5] for r in rows]), embed([r[6] for r in rows])
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return 100 * spearmanr(cos, [float(r[4]) for r in rows]).statistic


def write_grid(tmp_path: Path, tiny_bert: Path, **extra: object) -> Path:
    data = write_small_sts(tmp_path / "data")
    corpus = write_corpus(tmp_path / "corpus.txt", 40)
    base = {
        "model": {"name_or_path": str(tiny_bert), "pooler": "avg"},
        "data": {"data_dir": str(data), "train_file": str(corpus)},
        "training": {"batch_size": 8, "max_steps": 2, "eval_steps": 2, "save_steps": 0, "progress": False},
        "eval": {"final_tasks": ["stsb_dev", "stsb"]},
    }
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base), encoding="utf-8")
    grid = {
        "title": "Tiny targets",
        "base": str(tmp_path / "base.yaml"),
        "seeds": [1, 2],
        "also": ["stsb"],
        "points": [
            {"name": "start", "once": True, "postprocess": {"method": "none", "model": "start"}},
            {
                "name": "bare student",
                "once": True,
                "set": {"model.student_layers": [1]},
                "postprocess": {"method": "none", "model": "start"},
            },
            {"name": "trained"},
        ],
        "variants": {"cpu": {}},
        "tables": ["speed.json"],
        "targets": [
            {
                "what": "trained keeps 99% of start",
                "measured": {"point": "trained"},
                "against": {"point": "start"},
                "compare": "ratio",
                "at_least": 0.99,
            },
            {
                "what": "test minus start",
                "measured": {"point": "trained", "metric": "stsb"},
                "against": {"point": "start"},
                "compare": "difference",
                "at_least": 1000.0,
            },
            {"what": "speed", "measured": {"table": "speed.json", "value": "speedup"}, "at_least": 1.8},
        ],
        **extra,
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(grid, sort_keys=False), encoding="utf-8")
    return path


def table_rows(page: str, first: str) -> dict[str, list[str]]:
    """The rows of the Markdown table whose header starts with ``first``, keyed by their first cell."""
    lines = page.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first} |"))
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.split("|")[1:-1]]
        rows[cells[0]] = cells
    return rows


def test_once_evaluate_only_also_targets_and_tables(tmp_path: Path, tiny_bert: Path) -> None:
    grid = write_grid(tmp_path, tiny_bert)
    runs, out = tmp_path / "runs", tmp_path / "out"
    (out / "tiny-cpu").mkdir(parents=True)
    speed = {
        "title": "Encode speed",
        "columns": ["model", "sentences/s"],
        "rows": [["teacher", 100.0], ["student", 210.5]],
        "values": {"speedup": 2.105},
        "command": "python bench/x.py",
    }
    (out / "tiny-cpu" / "speed.json").write_text(json.dumps(speed), encoding="utf-8")
    args = ["experiment", str(grid), "--variant", "cpu", "--runs-dir", str(runs), "--output", str(out)]
    assert main(args) == 0

    # the once point ran for the first seed only, and is the start model evaluated as it is
    assert sorted(p.name for p in (runs / "tiny/cpu/start").iterdir()) == ["seed-1"]
    start = json.loads((runs / "tiny/cpu/start/seed-1/results.json").read_text())
    start_dev = start["results"]["stsb_dev"]["STSBenchmark"]["spearman"]
    assert start_dev == pytest.approx(spearman_of(tiny_bert, tmp_path / "data", "dev"), abs=1e-3)
    bare = json.loads((runs / "tiny/cpu/bare-student/seed-1/results.json").read_text())["results"]
    assert bare["stsb_dev"]["STSBenchmark"]["spearman"] == pytest.approx(
        bare_student_spearman(tiny_bert, tmp_path / "data", 1), abs=1e-3
    )
    trained = [
        json.loads((runs / f"tiny/cpu/trained/seed-{s}/results.json").read_text())["results"] for s in (1, 2)
    ]
    dev = [r["stsb_dev"]["STSBenchmark"]["spearman"] for r in trained]
    test = [r["stsb"]["STSBenchmark"]["spearman"] for r in trained]

    page = (out / "tiny-cpu.md").read_text(encoding="utf-8")
    grid_rows = table_rows(page, "Point")
    assert grid_rows["start"][2] == f"{start_dev:.2f}" and grid_rows["start"][3] == f"1: {start_dev:.2f}"
    assert grid_rows["trained"][2] == f"{statistics.fmean(dev):.2f} ± {statistics.stdev(dev):.2f}"
    assert grid_rows["trained"][4] == f"{statistics.fmean(test):.2f} ± {statistics.stdev(test):.2f}"

    targets = table_rows(page, "Target")
    ratio = statistics.fmean(dev) / start_dev
    assert targets["trained keeps 99% of start"][1].startswith(f"{ratio:.3f} (")
    assert targets["trained keeps 99% of start"][3] == (
        "yes" if ratio >= 0.99 else f"no, short by {0.99 - ratio:.3g}"
    )
    difference = statistics.fmean(test) - start_dev
    assert targets["test minus start"][1].startswith(f"{difference:+.2f}")
    assert targets["test minus start"][3] == f"no, short by {1000.0 - difference:.3g}"
    assert targets["speed"][1:] == ["2.10", "≥ 1.8", "yes"]
    assert table_rows(page, "model") == {
        "teacher": ["teacher", "100.00"],
        "student": ["student", "210.50"],
    }
    assert "python bench/x.py" in page

    # rebuilt from the summaries alone (run folders gone), the page is the same
    shutil.rmtree(runs)
    assert main([*args, "--from-summaries"]) == 0
    assert (out / "tiny-cpu.md").read_text(encoding="utf-8") == page


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"also": ["nope"]}, "also names unknown metric"),
        ({"targets": [{"what": "x", "measured": {"point": "ghost"}, "at_least": 1}]}, "unknown point.*ghost"),
        ({"targets": [{"what": "x", "measured": {"point": "start"}}]}, "needs a number in at_least"),
        (
            {"targets": [{"what": "x", "measured": {"table": "other.json", "value": "v"}, "at_least": 1}]},
            "table 'other.json' is not in the grid's 'tables'",
        ),
        (
            {"targets": [{"what": "x", "measured": {"point": "start"}, "compare": "ratio", "at_least": 1}]},
            "compare 'ratio' needs 'against'",
        ),
    ],
)
def test_bad_targets_name_the_grid(tmp_path: Path, tiny_bert: Path, change: dict, message: str) -> None:
    grid = write_grid(tmp_path, tiny_bert, **change)
    with pytest.raises(ConfigError, match=message) as err:
        load_grid(grid)
    assert str(grid) in str(err.value)


def test_a_seeded_point_cannot_postprocess_a_once_point(tmp_path: Path, tiny_bert: Path) -> None:
    grid = write_grid(tmp_path, tiny_bert)
    data = yaml.safe_load(grid.read_text())
    data["points"] = [
        {"name": "trained", "once": True},
        {"name": "after", "postprocess": {"method": "none", "model": "trained"}},
    ]
    data["targets"] = []
    grid.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ConfigError, match="runs for every seed but its model 'trained' is 'once'"):
        load_grid(grid)


def test_a_new_training_budget_keeps_the_start_model_points(tmp_path: Path, tiny_bert: Path) -> None:
    """An evaluate-only point of the start model depends on the model and evaluation keys, not on the grid's
    training budget: a changed max_steps retrains the trained point's folder (an error until it is deleted)
    but reuses the start model's result; a changed model key is refused for both."""
    from sentcl.experiments.runs import run_grid

    grid = write_grid(tmp_path, tiny_bert, targets=[], tables=[])
    runs = tmp_path / "runs"
    run_grid(load_grid(grid), "cpu", runs)
    start = runs / "tiny/cpu/start/seed-1/results.json"
    before = start.read_bytes()
    data = yaml.safe_load(grid.read_text())
    data["variants"] = {"cpu": {"training.max_steps": 3, "training.eval_steps": 3}}
    grid.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"point 'trained'.*training.max_steps: 2 in the run, 3 now"):
        run_grid(load_grid(grid), "cpu", runs)
    for seed in (1, 2):
        shutil.rmtree(runs / f"tiny/cpu/trained/seed-{seed}")
    rows = run_grid(load_grid(grid), "cpu", runs)
    assert start.read_bytes() == before and [r.reused for r in rows[:2]] == [True, True]
    data["variants"] = {"cpu": {"training.max_steps": 3, "training.eval_steps": 3, "model.pooler": "cls"}}
    grid.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"point 'start'.*model.pooler: 'avg' in the run, 'cls' now"):
        run_grid(load_grid(grid), "cpu", runs)


def test_a_target_of_a_point_not_run_yet_is_not_measured() -> None:
    """A page of some points only (--only) shows such a target as not measured instead of failing."""
    from sentcl.experiments.targets import Source, Target, targets_markdown

    target = Target("keeps 97%", Source(point="student"), "ratio", Source(point="teacher"), at_least=0.97)
    values = {"teacher": [80.0]}
    text = targets_markdown([target], lambda point, metric: values.get(point, []), {})
    assert "| keeps 97% | not measured (no runs of point 'student') | - | - |" in text
    values["student"] = [76.0, 78.0]
    assert "| keeps 97% | 0.963 (77.00 / 80.00) | ≥ 0.97 | no, short by 0.0075 |" in targets_markdown(
        [target], lambda point, metric: values.get(point, []), {}
    )
