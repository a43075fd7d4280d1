"""bench/static_speed.py on a tiny teacher: sentence-transformers' real encode in a worker (this interpreter as
the peers'), a static student of the teacher, both references' ratios from the same rounds, each point's call
and the worker's versions recorded. No timing is asserted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers.tiny_bert import build_tiny_bert
from modeling.modeling_folders import st_folder

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


@pytest.mark.slow
def test_static_speed_on_a_tiny_teacher(tmp_path: Path, data_dir: Path) -> None:
    from bench import static_speed
    from sentcl.config.static_recipe import load_static_recipe
    from sentcl.methods.static_student import build_static_student

    teacher = st_folder(tmp_path / "teacher", build_tiny_bert(tmp_path / "bert"), "mean", [], True)
    recipe = load_static_recipe(
        overrides=[
            f"teacher={teacher}",
            f"output_dir={tmp_path / 'static'}",
            "dim=16",
            "fit.steps=0",
            "max_sentences=200",
        ]
    )
    build_static_student(recipe, data_dir)
    out = tmp_path / "speed.json"
    argv = [
        "--teacher",
        str(teacher),
        "--peer-python",
        sys.executable,
        "--static",
        f"s16={tmp_path / 'static'}",
    ]
    argv += ["--sentences", "120", "--rounds", "2", "--min-seconds", "0", "--data-dir", str(data_dir)]
    static_speed.main([*argv, "--output", str(out)])
    data = json.loads(out.read_text(encoding="utf-8"))
    assert list(data["points"]) == ["teacher", "st", "s16", "s16@all"]
    assert data["load"]["sentences"] == data["load"]["distinct"] == 120
    rows = data["points"]
    for row in rows.values():
        assert len(row["round_rates"]) == 2 and min(row["round_rates"]) > 0
        per_round = [r / s for r, s in zip(row["round_rates"], rows["st"]["round_rates"], strict=True)]
        assert row["speed_vs_st"] == pytest.approx(sum(per_round) / 2)  # the median of two rounds
    assert rows["st"]["versions"]["sentence-transformers"] and "SentenceTransformer" in rows["st"]["called"]
    assert rows["s16@all"]["called"].endswith("batch_size=120)")
    assert rows["s16"]["sts"]["source"] == "measured in this run" and -100 < rows["s16"]["sts"]["avg"] < 100
    assert rows["s16@all"]["size"] == rows["s16"]["size"]
    assert rows["teacher"]["sts"]["avg"] is None  # no committed figure for a tiny teacher


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    from bench.static_speed import named

    with pytest.raises(ValueError, match="--model2vec 'm2v=.*nowhere'"):
        named([f"m2v={tmp_path / 'nowhere'}"], "--model2vec")
