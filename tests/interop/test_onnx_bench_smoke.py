"""bench/encode_vs_st.py's ONNX modes run end to end on the tiny model (speed itself is measured in bench/)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest


def test_encode_vs_st_onnx_modes(tiny_bert: Path, tmp_path: Path) -> None:
    from bench import encode_vs_st

    out = tmp_path / "encode.json"
    modes = "sentcl,st,sentcl-onnx,sentcl-onnx-int8,st-onnx"
    encode_vs_st.main(
        ["--model", str(tiny_bert), "--modes", modes, "--sentences", "60", "--chunks", "2"]
        + ["--threads", "1", "--batch-size", "16", "--output", str(out)]
    )
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["modes"]["sentcl-onnx"]["max_abs_diff_vs_st"] < 1e-4  # same embedding as the peer's PyTorch
    assert data["modes"]["sentcl-onnx-int8"]["cos_to_sentcl_fp32"]["mean"] > 0.9
    assert {"onnx_fp32>=1.5x_st", "onnx_int8>=2.5x_st"} <= set(data["targets"])
    if (
        importlib.util.find_spec("optimum") is None
    ):  # the peer's ONNX backend: run, or skipped with the reason
        assert "optimum" in data["skipped"]["st-onnx"]
    else:
        assert "st-onnx" in data["modes"]


@pytest.mark.slow  # about 50 s: a second Python process runs sentence-transformers
def test_peer_worker_matches_in_process_st(tiny_bert: Path) -> None:
    """bench/st_peer.py's persistent worker (what ``--peer-python`` runs st-onnx in), here on this very
    interpreter with the PyTorch backend: chunk by chunk, the same embeddings as sentence-transformers in
    process, and its own timing of the encode call."""
    import sys

    import numpy as np
    from sentence_transformers import SentenceTransformer

    from bench.st_peer import PeerEncoder

    chunks = [["a cat sat on the mat", "dogs run"], ["the quick brown fox jumps over the lazy dog"] * 3]
    st = SentenceTransformer(str(tiny_bert), device="cpu")
    st.max_seq_length = 32
    peer = PeerEncoder(sys.executable, str(tiny_bert), "torch", batch_size=2, max_length=32, threads=1)
    try:
        for chunk in chunks:  # one worker, several requests
            got = peer(chunk)
            want = st.encode(chunk, batch_size=2, convert_to_numpy=True, normalize_embeddings=True)
            assert got.shape == want.shape
            assert np.abs(got - want).max() < 1e-5
            assert 0.0 < peer.last_seconds < 60.0
        assert "sentence-transformers" in peer.versions
    finally:
        peer.close()
    assert peer.proc.returncode == 0
