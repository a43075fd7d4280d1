"""bench/distill_speed.py on tiny models: the JSON has every mode's rates, per-round ratios that are the
rates' quotients, sizes that match the folders, and an int8 export close to its PyTorch model. No timing is
asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.tiny_bert import build_tiny_bert
from modeling.modeling_folders import st_folder

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


def test_distill_speed_on_tiny_models(tmp_path: Path, data_dir: Path) -> None:
    from bench import distill_speed

    teacher = st_folder(tmp_path / "teacher", build_tiny_bert(tmp_path / "bert4", layers=4), "mean", [], True)
    out = tmp_path / "speed.json"
    argv = ["--teacher", str(teacher), "--student-layers", "0,3", "--rounds", "2", "--sentences", "40"]
    distill_speed.main(
        [*argv, "--modes", ",".join(distill_speed.MODES), "--data-dir", str(data_dir), "--output", str(out)]
    )
    data = json.loads(out.read_text(encoding="utf-8"))
    assert {"benchmark", "command", "machine", "loadavg_end"} <= set(data)
    assert set(data["modes"]) == set(distill_speed.MODES) and data["sentences"] == 40
    assert set(distill_speed.DEFAULT_MODES) == set(distill_speed.MODES) - {"student-onnx-int8-before"}
    teacher_rates = data["modes"]["teacher"]["round_rates"]
    for row in data["modes"].values():
        assert len(row["round_rates"]) == 2 and min(row["round_rates"]) > 0
        expected = [r / t for r, t in zip(row["round_rates"], teacher_rates, strict=True)]
        assert row["round_ratios"] == pytest.approx(expected)
        assert row["speed_vs_teacher"] == pytest.approx(sum(expected) / 2)  # median of two
    weights = teacher / "model.safetensors"
    assert data["sizes"]["teacher"]["weights_bytes"] == weights.stat().st_size
    assert data["sizes"]["teacher"]["bytes"] == sum(
        f.stat().st_size for f in teacher.rglob("*") if f.is_file()
    )
    assert data["sizes"]["student"]["weights_bytes"] < data["sizes"]["teacher"]["weights_bytes"]
    assert data["sizes"]["student-onnx-int8"]["weights_bytes"] > 0
    assert data["modes"]["student-onnx-int8"]["cos_to_student"]["min"] > 0.9
    # the same export run by the session and passes of before: the same graph, as close to the student
    assert data["modes"]["student-onnx-int8-before"]["cos_to_student"]["min"] > 0.9
    assert data["sizes"]["student-onnx-int8-before"] == data["sizes"]["student-onnx-int8"]


@pytest.mark.slow
def test_side_table_for_the_grid_page(tmp_path: Path, data_dir: Path) -> None:
    """--table writes what a grid page shows (sentcl.experiments.targets reads it back): the rows and the targets'
    values equal the result's own figures; --eval-int8's STS average is the mean of its seven tasks."""
    from bench import distill_speed
    from sentcl.experiments.targets import read_table, table_markdown

    teacher = st_folder(tmp_path / "teacher", build_tiny_bert(tmp_path / "bert4", layers=4), "mean", [], True)
    table = tmp_path / "page" / "speed.json"
    table.parent.mkdir()
    argv = ["--teacher", str(teacher), "--student-layers", "0,3", "--rounds", "2", "--sentences", "40"]
    argv += ["--modes", "teacher,student,student-onnx-int8", "--eval-int8", "--table", str(table)]
    res = distill_speed.main([*argv, "--data-dir", str(data_dir), "--output", str(tmp_path / "r.json")])
    side = read_table(table.parent, "speed.json")
    assert [row[0] for row in side["rows"]] == ["teacher", "student", "student-onnx-int8"]
    for row in side["rows"]:
        assert row[2] == round(res["modes"][row[0]]["speed_vs_teacher"], 2)
    values = side["values"]
    assert values["student_pytorch_speedup"] == round(res["modes"]["student"]["speed_vs_teacher"], 3)
    assert values["student_int8_speedup"] == round(res["modes"]["student-onnx-int8"]["speed_vs_teacher"], 3)
    tasks = res["student_int8_sts"]["results"]
    # the paper's main score per task: STS12-16 pool every subset ("all"), STS-B and SICK-R their Spearman
    per_task = [v["all"] if "all" in v else v["spearman"] for k, v in tasks.items() if k != "avg"]
    assert len(per_task) == 7
    assert values["student_int8_sts_avg"] == pytest.approx(sum(per_task) / 7, abs=0.005)
    assert side["command"].startswith("python -m bench.distill_speed") and "--eval-int8" in side["command"]
    assert "| student-onnx-int8 |" in table_markdown(side)
