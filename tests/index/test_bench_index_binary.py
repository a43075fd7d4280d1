"""Smoke test of bench/index_binary.py on a tiny corpus (no timing asserted): every point is built, tuned and
measured, and its memory is the codes plus the id -> row table, counted here by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


def test_bench_index_binary_points(tmp_path: Path, tiny_bert: Path) -> None:
    from bench import index_binary
    from sentcl.data.shards import encode_shards
    from sentcl.modeling.open import load_encoder

    rng = np.random.default_rng(0)
    words = ["river", "stone", "light", "paper", "green", "music", "quiet", "house", "north", "glass"]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(" ".join(rng.choice(words, 5)) + "\n" for _ in range(600)), encoding="utf-8")
    model = load_encoder(str(tiny_bert))
    encode_shards(model, corpus, tmp_path / "emb", 200, model_name=str(tiny_bert), normalize=True)
    sts = tmp_path / "data/senteval/STS/STSBenchmark/sts-test.csv"
    sts.parent.mkdir(parents=True)
    pairs = [(" ".join(rng.choice(words, 4)), " ".join(rng.choice(words, 6))) for _ in range(15)]
    sts.write_text(
        "".join(f"g\tf\ty\t{i}\t1.0\t{a}\t{b}\n" for i, (a, b) in enumerate(pairs)), encoding="utf-8"
    )
    argv = [
        "--embeddings",
        str(tmp_path / "emb"),
        "--data-dir",
        str(tmp_path / "data"),
        "--model",
        str(tiny_bert),
    ]
    argv += ["--cache", str(tmp_path / "cache"), "--rounds", "1", "--one-query", "3"]
    data = index_binary.main([*argv, "--output", str(tmp_path / "out.json")])
    rows = {r["type"]: r for r in data["rows"]}
    assert set(rows) == {"flat", "binary", "binary-hnsw", "int8"}
    dim = model.embedding_dim
    float_bytes = 600 * dim * 4
    # the codes, and the id -> row table of the rows held out while tuning (8 bytes a row)
    assert rows["binary"]["memory_bytes"] == 600 * ((dim + 7) // 8) + 600 * 8
    assert rows["int8"]["memory_bytes"] == 600 * dim + 600 * 8
    assert rows["binary-hnsw"]["memory_bytes"] > rows["binary"]["memory_bytes"]
    for name in ("binary", "binary-hnsw", "int8"):
        row = rows[name]
        assert row["float_memory_bytes"] == float_bytes and 0 <= row["recall_at_10"] <= 1
        assert row["setting"]["refine"] >= 1 and row["qps_one_query"] > 0 and row["x_exact_one_query"] > 0
