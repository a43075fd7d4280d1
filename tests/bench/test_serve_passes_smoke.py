"""Smoke test of bench/serve_passes.py on the tiny BERT: one round of the four arms in fresh processes, the JSON
has its keys; and the replayed passes take every sentence exactly once, within the service's pass limits. No
timing is asserted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(ROOT / "src")]))


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.lists(st.integers(3, 60), min_size=1, max_size=8), max_size=40),
    clients=st.integers(1, 20),
    batch=st.integers(1, 20),
)
def test_replayed_passes_take_every_sentence_once(lengths: list[list[int]], clients: int, batch: int) -> None:
    from bench.serve_passes import parse_args, service_passes

    args = parse_args(["--clients", str(clients), "--serve-batch-size", str(batch)])
    passes = service_passes(lengths, args)
    taken = [pair for one in passes for pair in one]
    assert sorted(taken) == [(r, row) for r, sizes in enumerate(lengths) for row in range(len(sizes))]
    assert all(0 < len(one) <= batch for one in passes)
    assert all(len(one) * max(lengths[r][i] for r, i in one) <= 4096 or len(one) == 1 for one in passes)
    first_pass = {r for r, _ in passes[0]} if passes else set()
    assert all(r < clients for r in first_pass), "only the first --clients requests are in flight at first"


@pytest.mark.slow  # four fresh processes, each loading the model
def test_serve_passes(tiny_bert: Path, tmp_path: Path) -> None:
    from bench import serve_passes

    out = tmp_path / "passes.json"
    argv = ["--model", str(tiny_bert), "--requests", "12", "--batch-size", "16", "--max-length", "32"]
    serve_passes.main([*argv, "--rounds", "1", "--output", str(out)])
    data = json.loads(out.read_text(encoding="utf-8"))
    assert {"benchmark", "command", "machine", "rounds", "summary"} <= set(data)
    row = data["rounds"][0]
    assert set(row) == set(serve_passes.ARMS)
    assert len({row[arm]["sentences"] for arm in serve_passes.ARMS}) == 1 and row["encode"]["sentences"] > 12
    assert all(row[arm]["user_s"] > 0 and row[arm]["passes"] > 0 for arm in serve_passes.ARMS[1:])
    assert all(data["summary"][arm]["cpu_ratio_to_encode"] > 0 for arm in serve_passes.ARMS[1:])
