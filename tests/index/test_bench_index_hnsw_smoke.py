"""Smoke test of bench/index_hnsw.py on a tiny size (no timing asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


def test_bench_index_hnsw_rows(tmp_path: Path) -> None:
    from bench import index_hnsw

    out = tmp_path / "hnsw.json"
    index_hnsw.main(
        [
            "--n",
            "3000",
            "--queries",
            "20",
            "--clusters",
            "30",
            "--configs",
            "sq8:8,flat:8",
            "--ef-search",
            "16,200",
        ]
        + ["--build-threads", "1", "--search-threads", "1", "--rounds", "1", "--output", str(out)]
    )
    data = json.loads(out.read_text())
    rows = {(r["storage"], r["ef_search"]): r for r in data["rows"]}
    assert set(rows) == {("sq8", 16), ("sq8", 200), ("flat", 16), ("flat", 200)}
    assert rows["sq8", 200]["size_mb"] < rows["flat", 200]["size_mb"]  # D bytes a vector, not 4·D
    assert rows["flat", 200]["recall_at_10"] >= 0.95  # a wide beam over 3,000 rows is near exact
    assert all(r["qps"] > 0 and r["exact_qps"] > 0 and r["search_threads"] == 1 for r in data["rows"])


def test_bench_index_hnsw_tuned_ef(tmp_path: Path) -> None:
    """--target-recall: efSearch from the build's ladder, the first reaching the target on its own draw."""
    from bench import index_hnsw
    from sentcl.index.tuning import EF_LADDER

    out = tmp_path / "hnsw.json"
    argv = [
        "--n",
        "3000",
        "--queries",
        "20",
        "--tune-queries",
        "50",
        "--clusters",
        "30",
        "--configs",
        "flat:8",
    ]
    argv += ["--ef-search", "16", "--target-recall", "0.99", "--build-threads", "1", "--search-threads", "1"]
    index_hnsw.main([*argv, "--rounds", "1", "--output", str(out)])
    data = json.loads(out.read_text())
    tuned = data["tuning"]["flat:8"]
    sweep = [r["ef_search"] for r in tuned["sweep"]]
    assert sweep == list(EF_LADDER[: len(sweep)])  # tried cheapest first
    assert all(r["recall_at_10"] < 0.99 for r in tuned["sweep"][:-1])  # stopped at the first reaching it
    assert tuned["reached"] == (tuned["sweep"][-1]["recall_at_10"] >= 0.99)
    rows = {r["ef_search"]: r for r in data["rows"]}
    assert set(rows) == {16, tuned["ef_search"]} and rows[tuned["ef_search"]]["tuned"]
