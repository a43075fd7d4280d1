"""Input identity of the sharded encode, the memory-mapped open of flat/ivf/ivfpq, a read-only output."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.shards import encode_argv

from sentcl.cli import main
from sentcl.data.shards import ShardSet
from sentcl.index.faiss_build import build_from_shards
from sentcl.index.faiss_params import IndexParams
from tests.index.index_fixtures import Fixed, clustered
from tests.index.test_shards import encode_one_npy

pytest.importorskip("faiss")
LINES = [f"the {w} number {i}" for i, w in enumerate("dog cat river bank song".split() * 5)]


def test_input_edited_in_place_to_the_same_size_is_re_encoded(
    tiny_bert: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    assert main(encode_argv(tiny_bert, corpus, tmp_path / "s")) == 0
    before = os.stat(corpus)
    edited = LINES[:]
    edited[3] = edited[3].replace("bank", "tree")  # same byte size, other text, same line offsets
    corpus.write_text("\n".join(edited) + "\n", encoding="utf-8")
    assert os.stat(corpus).st_size == before.st_size
    with caplog.at_level(logging.WARNING):
        assert main(encode_argv(tiny_bert, corpus, tmp_path / "s")) == 0
    assert "changed since the shards" in caplog.text and "SHA-256" in caplog.text
    encode_one_npy(tiny_bert, corpus, tmp_path / "one.npy")  # the reference: one plain encode of the new file
    shards = ShardSet.open(tmp_path / "s")
    stacked = np.concatenate([a for _, a in shards.iter_arrays()])
    np.testing.assert_allclose(stacked, np.load(tmp_path / "one.npy"), atol=1e-5)
    assert shards.texts([3]) == [edited[3]]


def test_texts_of_an_input_changed_after_the_encode_are_refused(tmp_path: Path) -> None:
    from sentcl.data.shards import encode_shards

    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"s{i:03d}\n" for i in range(30)), encoding="utf-8")
    encode_shards(Fixed(clustered(30, 4, 0)), corpus, tmp_path / "o", 10, model_name="fixed")
    corpus.write_text("".join(f"t{i:03d}\n" for i in range(30)), encoding="utf-8")  # same size and offsets
    with pytest.raises(ValueError, match="changed since it was encoded"):
        ShardSet.open(tmp_path / "o").texts([0])


RSS_PROBE = """
import sys
from sentcl.index import faiss_index, open_index, reader  # every import before the first reading
faiss_index.import_faiss()
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
before = rss()
index = open_index(sys.argv[1])
print(rss() - before)
"""


@pytest.mark.parametrize("kind", ["flat", "ivf", pytest.param("ivfpq", marks=pytest.mark.slow)])
def test_open_is_memory_mapped(tmp_path: Path, kind: str) -> None:
    """RSS growth of opening the index, in a fresh process, stays below a tenth of index.faiss's size."""
    from sentcl.data.shards import encode_shards

    n, dim = (240_000 if kind == "ivfpq" else 40_000), 128  # faiss's read keeps ~1 MiB whatever the size
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"s{i}\n" for i in range(n)), encoding="utf-8")
    encode_shards(Fixed(clustered(n, dim, 1)), corpus, tmp_path / "emb", 40_000, model_name="fixed")
    # ivfpq: 128 codes of 4 bits, 64 bytes a vector: as large a file as 8-bit codes of half the vectors, and an
    # eighth of the centroids to compare each sub-vector with (what the build's time goes to)
    params = IndexParams(nlist=64, pq_m=128, pq_bits=4, target_recall=None)
    out = build_from_shards(tmp_path / "emb", tmp_path / kind, kind, params)
    size = (out / "index.faiss").stat().st_size
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    import faiss  # warm the import in the probe too: its own RSS is not the index's

    probe = "import faiss, numpy\n" + RSS_PROBE
    done = subprocess.run(
        [sys.executable, "-c", probe, str(out)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    grown = int(done.stdout.split()[-1])
    assert size > 2_000_000 and grown < size / 10, (kind, size, grown)
    assert faiss.read_index(str(out / "index.faiss")).ntotal == n  # the file itself is complete


def test_build_into_a_folder_that_cannot_be_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sentcl.data.shards import encode_shards

    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"s{i}\n" for i in range(50)), encoding="utf-8")
    encode_shards(Fixed(clustered(50, 4, 0)), corpus, tmp_path / "emb", 25, model_name="fixed")
    target = Path("/sys/sentcl-index-test")  # read-only for every user here, root included
    code = main(
        ["index", "build", "--embeddings", str(tmp_path / "emb"), "--type", "flat", "--output", str(target)]
    )
    err = capsys.readouterr().err
    assert code == 1 and f"sentcl index: error: cannot write --output {target}: " in err  # a refused write
    assert "checkpoint" not in err.lower() and "Traceback" not in err and not target.exists()
