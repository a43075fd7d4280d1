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
