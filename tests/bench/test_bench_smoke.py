"""Smoke tests of the benchmark scripts (bench/): each main() runs on the tiny BERT with tiny sizes and
writes its JSON with the expected keys, so the scripts cannot rot. No timing is asserted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

# every test here runs a benchmark end to end on the tiny model: 1 to 2 minutes each on 2 shared cores
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


def _load(path: Path) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert {"benchmark", "command", "machine", "loadavg_end"} <= set(data)
    return data


def test_train_vs_st(tiny_bert: Path, tmp_path: Path) -> None:
    from bench import train_vs_st

    out = tmp_path / "train.json"
    train_vs_st.main(
        ["--model", str(tiny_bert), "--modes", "sentcl,st,sentcl-bf16", "--rounds", "2", "--steps", "1"]
        + ["--batch-size", "4", "--threads", "1", "--memory-steps", "1", "--memory-modes", "sentcl"]
        + ["--peak-sizes", "256", "--profile", "--output", str(out)]
    )
    data = _load(out)
    assert set(data["modes"]) | set(data["skipped"]) == {"sentcl", "st", "sentcl-bf16"}
    for mode in ("sentcl", "st"):
        row = data["modes"][mode]
        assert len(row["step_s"]) == 2 and len(row["loss"]) == 2
        assert {"s_per_step", "sentences_per_s", "flops_per_step", "utilisation", "stsb_dev"} <= set(row)
        assert row["flops_per_step"] > 0 and 0 < row["stsb_dev"] <= 100
    assert data["speed_vs_st"]["st"] == 1.0
    assert {"op", "self_ms", "share"} <= set(data["modes"]["sentcl"]["profile"][0])
    assert data["modes"]["sentcl"]["peak_rss_mb"] > 0  # measured in a fresh process


def test_both_sides_compute_the_same_loss(tiny_bert: Path) -> None:
    """The comparison is fair: without dropout, sentcl's InfoNCE and the peer's MultipleNegativesRankingLoss
    give the same loss on the same batch from the same model (a hand-written InfoNCE is the third opinion)."""
    import torch

    from bench.sides import PeerSide, SentclSide

    sentences = ["a man plays guitar", "the dog runs", "a cat sits on the road", "the bank said"]
    sentcl = SentclSide(str(tiny_bert), 32, 3e-5, 1)
    peer = PeerSide(str(tiny_bert), 32, 3e-5, 1)
    sentcl.model.eval()
    peer.model.eval()
    loss_sentcl = sentcl.loss_and_backward(sentences)
    loss_peer = peer.loss_and_backward(sentences)
    with torch.no_grad():
        z = sentcl.model(**sentcl.model.tokenize(sentences))  # (B, D) mean pooled
        z = torch.nn.functional.normalize(z, dim=-1)
        logits = z @ z.T / 0.05  # both views identical without dropout
        reference = float(torch.nn.functional.cross_entropy(logits, torch.arange(len(sentences))))
    np.testing.assert_allclose([loss_sentcl, loss_peer], [reference, reference], rtol=1e-5)


def test_encode_vs_st(tiny_bert: Path, tmp_path: Path) -> None:
    from bench import encode_vs_st

    out = tmp_path / "encode.json"
    encode_vs_st.main(
        ["--model", str(tiny_bert), "--modes", "sentcl,st,sentcl-int8", "--sentences", "120", "--chunks", "2"]
        + ["--threads", "1", "--batch-size", "16", "--output", str(out)]
    )
    data = _load(out)
    assert set(data["modes"]) == {"sentcl", "st", "sentcl-int8"}
    assert data["modes"]["sentcl"]["max_abs_diff_vs_st"] < 1e-5  # same mean pooling, same truncation
    assert data["modes"]["sentcl-int8"]["cos_to_sentcl_fp32"]["mean"] > 0.9
    assert {"sentcl_encode>=st", "int8>=1.5x_st"} <= set(data["targets"])


def test_memory_gradcache(tiny_bert: Path, tmp_path: Path) -> None:
    from bench import memory_gradcache

    out = tmp_path / "memory.json"
    memory_gradcache.main(
        [
            "--model",
            str(tiny_bert),
            "--configs",
            "plain-64:8:0,gradcache-512:16:4",
            "--allocators",
            "mmap128k",
        ]
        + ["--threads", "1", "--output", str(out)]
    )
    data = _load(out)
    assert set(data["runs"]) == {"plain-64@mmap128k", "gradcache-512@mmap128k"}
    assert data["runs"]["gradcache-512@mmap128k"]["chunk"] == 4
    assert data["targets"]["gradcache512_over_plain64_peak@mmap128k"] > 0


def test_streaming(tiny_bert: Path, tmp_path: Path) -> None:
    from bench import streaming

    out = tmp_path / "streaming.json"
    streaming.main(
        ["--model", str(tiny_bert), "--lines", "3000", "--runs", "memory-small,stream-large", "--steps", "1"]
        + ["--batch-size", "4", "--threads", "1", "--workdir", str(tmp_path / "work"), "--output", str(out)]
    )
    data = _load(out)
    assert data["runs"]["stream-large"]["examples"] == 3000
    assert data["runs"]["memory-small"]["examples"] == 11913  # the wiki prefix has no empty line
    large = data["caches"]["large"]
    # the second open reuses the index and token caches that the first one built: it must be the faster one
    assert 0 < large["second_open_s"] < large["first_open_s"], large
    assert "growth<200MB" in data["targets"]


def test_threads(tiny_bert: Path, tmp_path: Path) -> None:
    from bench import threads

    out = tmp_path / "threads.json"
    threads.main(
        ["--model", str(tiny_bert), "--settings", "1:default,1:passive", "--rounds", "1", "--steps", "1"]
        + ["--batch-size", "4", "--output", str(out)]
    )
    data = _load(out)
    assert set(data["settings"]) == {"1:default", "1:passive"}
    assert all(len(row["step_s"]) == 1 and row["s_per_step"] > 0 for row in data["settings"].values())


def test_generated_corpus_lines_are_distinct(tmp_path: Path) -> None:
    from bench.streaming import generate_corpus

    source = tmp_path / "src.txt"
    source.write_text("alpha\n\nbeta\n", encoding="utf-8")
    lines = generate_corpus(source, tmp_path / "gen.txt", 5).read_text(encoding="utf-8").splitlines()
    assert lines == ["0 alpha", "1 beta", "2 alpha", "3 beta", "4 alpha"]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


def test_fingerprint(tmp_path: Path) -> None:
    """The fingerprint cost benchmark on a 2 MiB folder: one digest throughout, the warm call the cheapest."""
    from bench import fingerprint

    out = tmp_path / "fp.json"
    fingerprint.main(["--mb", "2", "--repeats", "1", "--work-dir", str(tmp_path), "--output", str(out)])
    data = _load(out)
    assert data["same_digest_every_time"] and data["folder_bytes"] == 2 * 2**20
    seconds = data["seconds"]
    assert seconds["warm"]["median"] < seconds["cold"]["median"]
