"""Smoke tests of bench/index.py and bench/shard_memory.py on tiny sizes (no timing asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


def test_bench_index_rows(tmp_path: Path) -> None:
    from bench import index

    out = tmp_path / "index.json"
    index.main(
        ["--n", "3000", "--dim", "16", "--queries", "20", "--clusters", "30", "--rounds", "1"]
        + ["--output", str(out)]
    )
    data = json.loads(out.read_text())
    assert {"benchmark", "command", "machine", "loadavg_end"} <= set(data)
    kinds = {r["type"] for r in data["rows"]}
    assert kinds == {"flat", "ivf", "hnsw", "ivfpq"}
    flat = next(r for r in data["rows"] if r["type"] == "flat")
    assert flat["recall_at_10"] == 1.0 and flat["speedup_vs_exact"] == 1.0
    assert all(0 <= r["recall_at_10"] <= 1 and r["qps"] > 0 and r["size_mb"] > 0 for r in data["rows"])


@pytest.mark.slow  # about 40 s: fresh processes encode shards
def test_bench_shard_memory(tmp_path: Path, tiny_bert: Path) -> None:
    from bench import shard_memory

    out = tmp_path / "sm.json"
    shard_memory.main(
        ["--model", str(tiny_bert), "--sizes", "30", "--shard-size", "20", "--output", str(out)]
    )
    rows = json.loads(out.read_text())["rows"]
    assert [r["lines"] for r in rows] == [30] and all(r["peak_rss_mb"] > 0 for r in rows)
