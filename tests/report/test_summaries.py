"""Run summaries beside a grid's page: written by ``sentcl experiment``, and the page rebuilt from them alone
equals the page written after the runs; every committed page with summaries equals its rebuild."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from sentcl.cli import main
from sentcl.config import to_dict
from sentcl.experiments.grid import load_grid, point_configs
from sentcl.experiments.page import write_grid_report
from sentcl.experiments.runs import GridRow, start_values
from sentcl.experiments.summaries import (
    SUMMARY_FILES,
    SUMMARY_RECORD,
    rows_from_summaries,
    summaries_dir,
    write_summaries,
)
from sentcl.files.output import MARKER

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
GRID = Path("configs/experiments/pooling.yaml")  # as the command is typed in the checkout


def fake_runs(tmp: Path) -> list[GridRow]:
    """A run folder per point of the pooling grid (cpu): summary files, a weights file that must stay behind."""
    spec = load_grid(ROOT / GRID)
    rows = []
    for i, (point, cfg) in enumerate(point_configs(spec, "cpu", tmp / "runs")):
        run = tmp / "runs" / "pooling" / "cpu" / point.slug
        (run / "best").mkdir(parents=True)
        (run / "best" / "model.safetensors").write_bytes(b"weights")
        (run / "config.json").write_text(json.dumps(to_dict(cfg)), encoding="utf-8")  # the point's config
        results = {"best_step": 40, "results": {"stsb_dev": {"STSBenchmark": {"spearman": 80.0 + i / 3}}}}
        (run / "results.json").write_text(json.dumps(results), encoding="utf-8")
        (run / "metrics.jsonl").write_text('{"step": 40, "loss": 0.1}\n', encoding="utf-8")
        (run / "provenance.json").write_text('{"git": "abc"}', encoding="utf-8")
        rows.append(GridRow(point, run, 80.0 + i / 3, 40, spec.paper.get(point.name), False))
    return rows


def test_page_rebuilt_from_summaries_equals_the_page_of_the_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # the page shows paths relative to the checkout
    spec = load_grid(GRID)
    rows = fake_runs(tmp_path)
    out = tmp_path / "pages"
    summaries = write_summaries(rows, summaries_dir(out, spec, "cpu"))
    assert summaries == out / "pooling-cpu" / "runs"
    for row in rows:
        copied = sorted(p.name for p in (summaries / row.point.slug).iterdir())
        # no weights, no start_results.json (the run had none); the SHA-256 record and the folder's marker
        assert copied == sorted([*SUMMARY_FILES[:4], SUMMARY_RECORD, MARKER])
        assert (summaries / row.point.slug / "metrics.jsonl").read_bytes() == (
            row.run_dir / "metrics.jsonl"
        ).read_bytes()
    md, _ = write_grid_report(spec, "cpu", rows, out, "sentcl experiment x", summaries)
    page = md.read_text(encoding="utf-8")
    assert "80.33" in page and "pooling-cpu/runs/" in page
    rebuilt = rows_from_summaries(spec, "cpu", summaries)
    assert [(r.point.name, r.value, r.best_step, r.run_dir) for r in rebuilt] == [
        (r.point.name, r.value, r.best_step, r.run_dir) for r in rows
    ]
    # through the command: train nothing, the page from the summaries alone (the run folders deleted)
    for row in rows:
        for name in ("results.json", "config.json"):
            (row.run_dir / name).unlink()
    page_of_runs = page.replace("sentcl experiment x", f"sentcl experiment {GRID} --variant cpu")
    argv = [
        "experiment",
        str(GRID),
        "--variant",
        "cpu",
        "--output",
        str(out),
        "--from-summaries",
    ]
    assert main(argv) == 0
    assert md.read_text(encoding="utf-8") == page_of_runs


def test_the_page_shows_the_start_model_in_its_own_pooling_beside_each_run_and_keeps_it_in_the_summaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that evaluated its start model in its own pooling (start_own_pooling.json) gets that score in a
    column before its own, on the page of the runs and on the page rebuilt from the summaries alone."""
    monkeypatch.chdir(ROOT)
    spec = load_grid(GRID)
    rows = fake_runs(tmp_path)
    own = {"pooler": "avg", "results": {"stsb_dev": {"STSBenchmark": {"spearman": 86.72}}}}
    for row in rows:
        (row.run_dir / "start_own_pooling.json").write_text(json.dumps(own), encoding="utf-8")
        row.starts = start_values(spec, row.run_dir, None)
    out = tmp_path / "pages"
    summaries = write_summaries(rows, summaries_dir(out, spec, "cpu"))
    md, _ = write_grid_report(spec, "cpu", rows, out, f"sentcl experiment {GRID} --variant cpu", summaries)
    lines = md.read_text(encoding="utf-8").splitlines()
    header = next(line for line in lines if line.startswith("| Point"))
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert cells[2:4] == ["start model, own pooling (avg)", "STS-B dev"]
    table = [line for line in lines if line.startswith("| ") and "`" in line]
    assert len(table) == len(rows)
    for line, row in zip(table, rows, strict=True):
        assert [c.strip() for c in line.strip("|").split("|")][2:4] == ["86.72", f"{row.value:.2f}"]
    for row in rows:
        assert (summaries / row.point.slug / "start_own_pooling.json").is_file()
        for name in ("results.json", "config.json", "start_own_pooling.json"):
            (row.run_dir / name).unlink()
    before = md.read_text(encoding="utf-8")
    argv = ["experiment", str(GRID), "--variant", "cpu", "--output", str(out), "--from-summaries"]
    assert main(argv) == 0
    assert md.read_text(encoding="utf-8") == before


def test_missing_or_broken_summary_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    spec = load_grid(GRID)
    rows = fake_runs(tmp_path)
    (rows[1].run_dir / "results.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"fo-mlp-train.*results.json|results.json"):
        write_summaries(rows, tmp_path / "s")
    assert not (tmp_path / "s").exists()  # nothing half-written: every run is checked first
    summaries = write_summaries(rows[:1], tmp_path / "s")
    with pytest.raises(FileNotFoundError, match=str(summaries / rows[1].point.slug / "results.json")):
        rows_from_summaries(spec, "cpu", summaries)
    (summaries / rows[0].point.slug / "results.json").write_text("{oops", encoding="utf-8")
    with pytest.raises(ValueError, match=r"results.json: run results is not valid JSON \(line 1, column 2"):
        rows_from_summaries(spec, "cpu", summaries)


def committed_summaries() -> list[Path]:
    return sorted(p for p in RESULTS.glob("*/runs") if p.is_dir())


@pytest.mark.parametrize("summaries", committed_summaries(), ids=lambda p: p.parent.name)
def test_committed_page_equals_its_rebuild(
    summaries: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grid, variant = summaries.parent.name.rsplit("-", 1)
    page = RESULTS / f"{grid}-{variant}.md"
    assert page.is_file(), f"{summaries} has no page {page}"
    monkeypatch.chdir(ROOT)
    out = tmp_path / "pages"
    os.makedirs(out)
    os.symlink(summaries.parent, out / f"{grid}-{variant}")  # the summaries and any side tables beside them
    argv = ["experiment", f"configs/experiments/{grid}.yaml", "--variant", variant, "--output", str(out)]
    assert main([*argv, "--from-summaries"]) == 0
    assert (out / page.name).read_text(encoding="utf-8") == page.read_text(encoding="utf-8")


def test_some_page_has_committed_summaries() -> None:
    assert committed_summaries(), "no grid page has its run summaries committed"


def test_summaries_of_other_settings_are_refused_s_editedgrid_s_swapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """S_editedgrid: the grid file edited after the runs; S_swapped: two points' summary folders swapped. The
    page would state one config over the numbers of another: refused, naming the summary and the keys."""
    import shutil

    import yaml

    from sentcl.config import ConfigError

    monkeypatch.chdir(ROOT)
    spec = load_grid(GRID)
    rows = fake_runs(tmp_path)
    summaries = write_summaries(rows, tmp_path / "s")
    assert len(rows_from_summaries(spec, "cpu", summaries)) == len(rows)  # as written: accepted
    edited = yaml.safe_load(GRID.read_text(encoding="utf-8"))
    edited["variants"]["cpu"]["training.max_steps"] = 500
    (tmp_path / "pooling.yaml").write_text(yaml.safe_dump(edited), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs").symlink_to(ROOT / "configs")  # the grid's base, relative to the checkout
    with pytest.raises(
        ConfigError,
        match=r"config\.json: the run summary of point .*training\.max_steps: 40 in the run, 500 now",
    ):
        rows_from_summaries(load_grid(tmp_path / "pooling.yaml"), "cpu", summaries)
    monkeypatch.chdir(ROOT)
    a, b = (summaries / rows[0].point.slug, summaries / rows[1].point.slug)
    shutil.move(a, tmp_path / "t")
    shutil.move(b, a)
    shutil.move(tmp_path / "t", b)
    with pytest.raises(
        ConfigError, match=re.escape(f"{a.name}/config.json: the run summary of point {rows[0].point.name!r}")
    ):
        rows_from_summaries(spec, "cpu", summaries)


def test_a_changed_byte_of_a_summary_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sentcl.files.fingerprint import IntegrityError

    monkeypatch.chdir(ROOT)
    spec = load_grid(GRID)
    rows = fake_runs(tmp_path)
    summaries = write_summaries(rows, tmp_path / "s")
    results = summaries / rows[0].point.slug / "results.json"  # spearman 80.0
    results.write_text(results.read_text(encoding="utf-8").replace("80.0", "90.0"), encoding="utf-8")
    with pytest.raises(
        IntegrityError, match=r"results\.json changed since it was written: .*summary\.json records"
    ):
        rows_from_summaries(spec, "cpu", summaries)
