"""The frontier's search and service rows are the committed bench results' own figures (read here by hand), the
3-layer student's seed scores are the mean of each summary's seven tasks, and a target line says "met" exactly
when the target's rule holds (generated figures)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


def test_search_rows_are_the_committed_figures() -> None:
    from bench.frontier_side import SEARCH_RESULTS, search_points

    rows = search_points(ROOT, list(SEARCH_RESULTS))
    raw = [json.loads((ROOT / p).read_text(encoding="utf-8"))["rows"] for p in SEARCH_RESULTS]
    expected = [raw[0][0]] + [r for rs in raw for r in rs if r["type"] != "flat"]  # one exact row
    assert [r["recall_at_10"] for r in rows] == [r["recall_at_10"] for r in expected]
    assert [r["memory_bytes"] for r in rows] == [r["memory_bytes"] for r in expected]
    assert [r["qps_one_query"] for r in rows] == [r["qps_one_query"] for r in expected]
    assert rows[0]["index"].startswith("exact") and rows[1]["index"].startswith("binary")


def test_service_row_is_the_committed_summary() -> None:
    from bench.frontier_side import SERVE_RESULT, serve_point

    summary = json.loads((ROOT / SERVE_RESULT).read_text(encoding="utf-8"))["summary"]
    row = serve_point(ROOT, SERVE_RESULT)
    assert row["served_sentences_per_s"] == summary["serve_sentences_per_s"]
    assert row["ratio_median"] == summary["ratio_median"] and row["errors"] == summary["errors"]


def test_service_repeats_are_their_runs_and_the_first_is_the_quiet_row(tmp_path: Path) -> None:
    import statistics

    from bench.frontier_side import SERVE_QUIET, SERVE_REPEATS, serve_repeats

    record = json.loads((ROOT / SERVE_REPEATS).read_text(encoding="utf-8"))
    ratios = [run["summary"]["ratio_median"] for run in record["runs"]]
    assert record["runs"][0] == json.loads((ROOT / SERVE_QUIET).read_text(encoding="utf-8"))
    line = serve_repeats(ROOT)
    assert ", ".join(f"{x:.2f}x" for x in ratios) in line
    assert f"median {statistics.median(ratios):.2f}x" in line
    assert serve_repeats(tmp_path) == ""  # no record: no sentence


def test_a_missing_result_names_the_file(tmp_path: Path) -> None:
    from bench.frontier_side import serve_point

    with pytest.raises(FileNotFoundError, match="nope.json"):
        serve_point(tmp_path, "nope.json")


def test_seed_scores_are_each_summarys_seven_task_mean() -> None:
    from bench.frontier_targets import SEEDS, seed_scores

    found = seed_scores(ROOT)
    assert 42 in found
    for seed, avg in found.items():
        tasks = json.loads((ROOT / SEEDS / f"seed-{seed}" / "results.json").read_text())["results"]["sts"]
        scores = [v["all"] if "all" in v else v["spearman"] for k, v in tasks.items() if k != "avg"]
        assert len(scores) == 7 and avg == pytest.approx(sum(scores) / 7, abs=1e-9)


speeds = st.floats(min_value=0.5, max_value=10)
averages = st.floats(min_value=60, max_value=80)


@given(speeds, averages, averages)
def test_int8_target_line(speed: float, avg: float, teacher: float) -> None:
    from bench.frontier_targets import layer_lines

    rows = {"l3-onnx-int8": {"speed_vs_teacher": speed, "sts": {"avg": avg}}}
    (line,) = layer_lines(rows, teacher, Path("/nonexistent"))
    assert line.endswith("not met.") != (speed >= 5 and avg - teacher >= -3)


@given(st.floats(min_value=0.1, max_value=1.5), st.integers(min_value=0, max_value=3))
def test_serve_target_line(ratio: float, errors: int) -> None:
    from bench.frontier_targets import serve_line

    service = {"ratio_median": ratio, "errors": errors, "clients": 16, "loadavg_start": [1.0]}
    (line,) = serve_line(service)
    assert line.endswith("not met.") != (ratio >= 0.85 and errors == 0)
    (loaded,) = serve_line({**service, "loadavg_start": [6.0]})  # the target asks for a quiet machine
    assert loaded.endswith("not measured on a quiet machine.")
