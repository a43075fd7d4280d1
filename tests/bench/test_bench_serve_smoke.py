"""Smoke test of bench/serve_load.py on the tiny BERT: a real ``sentcl serve`` child process under a few
concurrent clients, two rounds and a one-second soak; the JSON has its keys. No timing is asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


@pytest.mark.slow  # about a minute: a real uvicorn under load
def test_serve_load(tiny_bert: Path, tmp_path: Path) -> None:
    from bench import serve_load

    out = tmp_path / "serve.json"
    serve_load.main(
        ["--model", str(tiny_bert), "--clients", "4", "--requests", "8", "--rounds", "2", "--time-cap", "60"]
        + ["--max-length", "32", "--batch-size", "16", "--threads", "1", "--soak-seconds", "1"]
        + ["--rss-every", "0.5", "--output", str(out)]
    )
    data = json.loads(out.read_text(encoding="utf-8"))
    assert {"benchmark", "command", "machine", "loadavg_end", "summary", "targets", "soak"} <= set(data)
    served = [row["serve"] for row in data["rounds"]]
    assert len(served) == 2 and all(s["requests_ok"] == 8 and not s["errors"] for s in served)
    assert all(s["sentences"] == served[0]["sentences"] > 0 for s in served)  # the same requests each round
    assert data["summary"]["errors"] == 0 and data["summary"]["ratio_median"] > 0
    assert all(row["serve"]["server_cpu_s"] > 0 and row["cpu_ratio"] > 0 for row in data["rounds"])
    assert len(data["soak"]["rss_mb"]) >= 3 and data["soak"]["rss_mb"][0][1] > 0
    assert data["soak"]["requests_ok"] > 0 and not data["soak"]["errors"]
