"""bench/onnx_int8.py on a tiny BERT: every variant's rates and per-round ratios (the rates' quotients), the
graphs the variants name (QAttention only where the fused graph was quantised; every weight MatMul of the unfused
trace an integer MatMul), fp32 graphs equal to PyTorch and int8 ones close. No timing is asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.tiny_bert import build_tiny_bert

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


def test_onnx_int8_variants_on_a_tiny_bert(tmp_path: Path, data_dir: Path) -> None:
    from bench import onnx_int8

    model = build_tiny_bert(tmp_path / "bert2", layers=2)
    out = tmp_path / "variants.json"
    argv = ["--student", str(model), "--rounds", "2", "--sentences", "30", "--data-dir", str(data_dir)]
    onnx_int8.main([*argv, "--output", str(out)])
    data = json.loads(out.read_text(encoding="utf-8"))
    rows = data["variants"]
    assert list(rows) == ["pytorch", *onnx_int8.VARIANTS] and data["sentences"] == 30
    for row in rows.values():
        expected = [r / t for r, t in zip(row["round_rates"], rows["pytorch"]["round_rates"], strict=True)]
        assert row["round_ratios"] == pytest.approx(expected)
        assert row["speed_vs_pytorch"] == pytest.approx(sum(expected) / 2)  # median of two
    for name in ("fp32-unfused", "fp32-unfused-4096-cells", "fp32-fused", "fp32-fused-slow-fusions"):
        assert rows[name]["cos_to_pytorch"]["min"] > 0.9999
    for name in ("int8-fused", "int8-unfused", "int8-mha", "int8-unfused-before"):
        assert rows[name]["cos_to_pytorch"]["min"] > 0.9
    # the fp32 export leaves SkipLayerNormalization out (two per layer with it: after attention, after the FFN)
    assert rows["fp32-fused"]["ops"]["SkipLayerNormalization"] == 0
    assert rows["fp32-fused-slow-fusions"]["ops"]["SkipLayerNormalization"] == 2 * 2
    assert rows["fp32-fused"]["ops"]["Attention"] == 2  # the attention fusion still finds both layers'
    assert rows["int8-unfused-before"]["ops"] == rows["int8-unfused"]["ops"]  # one file, two sessions
    assert (
        set(data["tokenizer_call_per_s"]) == {"ids_only", "all_fields"} and data["tokenizer_call_ratio"] > 0
    )
    assert rows["int8-fused"]["ops"]["QAttention"] == 2 and rows["int8-unfused"]["ops"]["QAttention"] == 0
    assert rows["int8-unfused"]["ops"]["MatMulInteger"] >= 2 * 6  # Q, K, V, output, two feed-forward (+ head)
    assert rows["int8-mha"]["ops"]["MultiHeadAttention"] == 2
    assert rows["int8-fused-matmul-only"]["ops"]["Attention"] == 2  # left in fp32
