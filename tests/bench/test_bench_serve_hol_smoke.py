"""Smoke test of bench/serve_hol.py on the tiny BERT with small inputs: a real ``sentcl serve`` child process,
six concurrent truncated inputs and a tiny request; the JSON has its keys. No timing is asserted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_serve_hol(tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    from bench import serve_hol

    out = tmp_path / "hol.json"
    serve_hol.main(["--model", str(tiny_bert), "--size", "20000", "--json", str(out)])
    data = json.loads(out.read_text(encoding="utf-8"))
    assert {"tiny_alone_s", "tiny_during_s", "big_s", "rss_before_mb", "rss_after_mb"} <= set(data)
    assert len(data["big_s"]) == 6 and all(s > 0 for s in data["big_s"])
