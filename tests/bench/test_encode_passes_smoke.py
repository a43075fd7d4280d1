"""Smoke test of bench/encode_passes.py on the tiny BERT: two rounds, both paths' vectors equal within 1e-5,
the JSON has its keys. No timing is asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_encode_passes(tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    from bench import encode_passes

    out = tmp_path / "passes.json"
    argv = ["--model", str(tiny_bert), "--sentences", "60", "--batch-size", "16", "--max-length", "32"]
    encode_passes.main([*argv, "--threads", "1", "--rounds", "2", "--output", str(out)])
    data = json.loads(out.read_text(encoding="utf-8"))
    assert {"benchmark", "command", "machine", "rounds", "summary"} <= set(data)
    assert len(data["rounds"]) == 2 and all(row["padding"] > 0 and row["fixed"] > 0 for row in data["rounds"])
    assert data["summary"]["max_abs_diff"] < 1e-5
