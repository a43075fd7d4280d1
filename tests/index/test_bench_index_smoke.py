"""Smoke tests of bench/index.py and bench/shard_memory.py on tiny sizes (no timing asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
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


def test_bench_index_real_on_given_embeddings(tmp_path: Path, tiny_bert: Path) -> None:
    """``bench/index.py --real --embeddings DIR``: a finished shard folder is the corpus, the STS-B test
    sentences of the data folder are encoded as queries (equal to the model's own vectors of them, in first-seen
    order), every type is measured on all the rows; shards of another model are refused."""
    from bench import index
    from sentcl.data.shards import encode_shards
    from sentcl.modeling.open import load_encoder

    rng = np.random.default_rng(0)
    words = ["river", "stone", "light", "paper", "green", "music", "quiet", "house", "north", "glass"]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(" ".join(rng.choice(words, 5)) + "\n" for _ in range(400)), encoding="utf-8")
    model = load_encoder(str(tiny_bert))
    encode_shards(model, corpus, tmp_path / "emb", 100, model_name=str(tiny_bert), normalize=True)
    sts = tmp_path / "data/senteval/STS/STSBenchmark/sts-test.csv"
    sts.parent.mkdir(parents=True)
    pairs = [(" ".join(rng.choice(words, 4)), " ".join(rng.choice(words, 6))) for _ in range(15)]
    sts.write_text(
        "".join(f"g\tf\ty\t{i}\t1.0\t{a}\t{b}\n" for i, (a, b) in enumerate(pairs)), encoding="utf-8"
    )
    argv = ["--real", "--embeddings", str(tmp_path / "emb"), "--data-dir", str(tmp_path / "data")]
    argv += ["--cache", str(tmp_path / "cache"), "--types", "ivf,hnsw", "--sizes", "1", "--rounds", "1"]
    argv += ["--one-query", "3", "--output", str(tmp_path / "out.json")]
    data = index.main([*argv, "--model", str(tiny_bert)])
    queries = list(dict.fromkeys(s for pair in pairs for s in pair))
    assert data["queries"] == len(queries) and {r["type"] for r in data["rows"]} == {"flat", "ivf", "hnsw"}
    q = np.asarray(model.encode(queries, normalize=True))  # (Q, D)
    np.testing.assert_allclose(np.load(tmp_path / "cache/queries.npy"), q, atol=1e-5)
    for row in data["rows"][1:]:
        assert row["n"] == 400 and 0 < row["recall_at_10"] <= 1
    with pytest.raises(SystemExit, match="encoded with"):
        index.main([*argv, "--model", "all-MiniLM-L6-v2"])
    (tmp_path / "not-shards").mkdir()  # a folder of no encode: the manifest's reader names what is missing
    argv[argv.index("--embeddings") + 1] = str(tmp_path / "not-shards")
    with pytest.raises(FileNotFoundError, match=r"shard manifest .*not-shards/manifest\.json"):
        index.main([*argv, "--model", str(tiny_bert)])
