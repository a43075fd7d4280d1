"""bench/frontier.py on a tiny teacher: every sentcl point is timed in every round, its ratios are the quotients
of its rates by the teacher's in the same round, sizes are the folders', the fp32 ONNX export agrees with the
teacher, and the STS column says where each figure came from. No timing is asserted."""

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


@pytest.mark.slow
def test_frontier_on_a_tiny_teacher(tmp_path: Path, data_dir: Path) -> None:
    from bench import frontier

    bert = build_tiny_bert(tmp_path / "bert6", layers=6)
    teacher = st_folder(tmp_path / "teacher", bert, "mean", [], True)
    out = tmp_path / "frontier.json"
    points = "teacher,teacher-onnx,l3,l3-onnx-int8,l3-pca128"
    argv = ["--teacher", str(teacher), "--points", points, "--rounds", "2", "--sentences", "200"]
    frontier.main([*argv, "--min-seconds", "0", "--data-dir", str(data_dir), "--output", str(out)])
    data = json.loads(out.read_text(encoding="utf-8"))
    assert list(data["points"]) == points.split(",") and data["sentences"] == 200
    teacher_rates = data["points"]["teacher"]["round_rates"]
    for row in data["points"].values():
        assert len(row["round_rates"]) == 2 and min(row["round_rates"]) > 0 and row["cpu_per_wall"] > 0
        expected = [r / t for r, t in zip(row["round_rates"], teacher_rates, strict=True)]
        assert row["round_ratios"] == pytest.approx(expected)
        assert row["speed_vs_teacher"] == pytest.approx(sum(expected) / 2)  # median of two
    files = [f for f in teacher.rglob("*") if f.is_file()]
    assert data["points"]["teacher"]["size"]["bytes"] == sum(f.stat().st_size for f in files)
    assert data["points"]["l3"]["size"]["bytes"] < data["points"]["teacher"]["size"]["bytes"]
    assert data["points"]["teacher-onnx"]["cos_to_teacher"]["min"] > 0.9999
    sts = {name: row["sts"] for name, row in data["points"].items()}
    assert sts["teacher"]["source"] == "measured in this run" and 0 < abs(sts["teacher"]["avg"]) < 100
    # no committed figure for a tiny teacher: the cut is timed only
    assert sts["l3"]["avg"] is None and "untrained" in sts["l3"]["source"]
    assert sts["teacher-onnx"]["avg"] is None  # the teacher's weights: not scored twice


def test_peers_need_their_interpreter(tmp_path: Path, data_dir: Path) -> None:
    from bench import frontier

    teacher = st_folder(tmp_path / "teacher", build_tiny_bert(tmp_path / "bert2", layers=2), "mean", [], True)
    argv = ["--teacher", str(teacher), "--points", "teacher,st", "--output", str(tmp_path / "x.json")]
    with pytest.raises(ValueError, match="--peer-python"):
        frontier.main([*argv, "--data-dir", str(data_dir)])


def test_committed_sts_is_the_mean_of_the_seeds_task_scores() -> None:
    """reference_sts reads the distillation grid's run summaries: recomputed here by hand (the paper's score per
    task: STS12-16 pool every subset, "all"; STS-B and SICK-R their Spearman), averaged over tasks then seeds."""
    from bench.frontier_points import GRID, reference_sts

    found = reference_sts(ROOT)
    for point, folder in (("teacher", "teacher-6-layers"), ("l3", "l3-0-2-4-mse"), ("l2", "l2-0-5-mse")):
        seeds = sorted((ROOT / GRID / folder).glob("seed-*/results.json"))
        per_seed = []
        for path in seeds:
            tasks = json.loads(path.read_text(encoding="utf-8"))["results"]["sts"]
            scores = [v["all"] if "all" in v else v["spearman"] for k, v in tasks.items() if k != "avg"]
            assert len(scores) == 7
            per_seed.append(sum(scores) / 7)
        assert found[point]["avg"] == pytest.approx(sum(per_seed) / len(per_seed), abs=1e-9)
        assert str(GRID / folder) in found[point]["source"]
    assert found["l3"]["avg"] == pytest.approx(73.29, abs=0.005)  # the distillation page's figure


@pytest.mark.slow
def test_a_trained_student_is_run_from_its_folder_and_scored(tmp_path: Path, data_dir: Path) -> None:
    """--student l3=FOLDER: the point runs that folder (its size, its vectors) and its STS average and its int8
    export's are measured here, not borrowed; the run carries the committed search and service rows."""
    from bench import frontier
    from sentcl.modeling.encoder import SentenceEncoder
    from sentcl.modeling.student import keep_layers

    teacher = st_folder(tmp_path / "teacher", build_tiny_bert(tmp_path / "bert6", layers=6), "mean", [], True)
    student = SentenceEncoder.from_pretrained(str(teacher))
    keep_layers(student.backbone, [0, 3, 5], str(teacher))
    student.save_pretrained(tmp_path / "trained")
    out = tmp_path / "frontier.json"
    argv = ["--teacher", str(teacher), "--points", "teacher,l3,l3-onnx-int8", "--rounds", "1"]
    argv += ["--student", f"l3={tmp_path / 'trained'}", "--sentences", "50", "--min-seconds", "0"]
    frontier.main([*argv, "--data-dir", str(data_dir), "--output", str(out)])
    data = json.loads(out.read_text(encoding="utf-8"))
    l3, int8 = data["points"]["l3"], data["points"]["l3-onnx-int8"]
    assert l3["trained_from"] == str(tmp_path / "trained")
    files = [f for f in (tmp_path / "trained").rglob("*") if f.is_file()]
    assert l3["size"]["bytes"] == sum(f.stat().st_size for f in files)
    for row in (l3, int8):
        assert row["sts"]["source"] == "measured in this run" and 0 < abs(row["sts"]["avg"]) < 100
    assert data["search"] and data["service"]["errors"] >= 0


def test_a_bad_student_spec_is_refused(tmp_path: Path, data_dir: Path) -> None:
    from bench import frontier

    argv = ["--points", "teacher,l3", "--output", str(tmp_path / "x.json"), "--data-dir", str(data_dir)]
    with pytest.raises(ValueError, match="NAME one of"):
        frontier.main([*argv, "--student", "l9=/tmp"])
    with pytest.raises(ValueError, match="no config.json"):
        frontier.main([*argv, "--student", f"l3={tmp_path}"])
