"""One index format family, one reader (``sentcl.index.format``, ``sentcl.index.reader``).

The folders of older sentcl are written here by hand, byte for byte as their writers wrote them (the search
cache's ``index.json`` of ``{"normalize", "backend", "size", "dim"}`` beside ``embeddings.npy`` and
``texts.jsonl``; ``sentcl index build``'s ``faiss.json`` with ``"format": "sentcl-faiss-index"``), and opened by
the one reader; searches are checked against numpy cosine.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from index_fixtures import write_shards

from sentcl.cli import main
from sentcl.index import is_ann_index, open_index
from sentcl.index.exact import ExactIndex, load_index
from sentcl.index.faiss_build import build_from_shards
from sentcl.index.faiss_params import IndexParams
from sentcl.index.format import FORMAT, read_meta
from sentcl.serve.index import load_search_index

TEXTS = [f"sentence {i}" for i in range(40)]


def cosine_top(vectors: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    v = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    return np.argsort(-(q @ v.T), axis=1, kind="stable")[:, :k]  # (Q, k)


def old_search_cache(folder: Path, vectors: np.ndarray) -> Path:
    """A ``sentcl search --index`` cache as sentcl wrote it before the family (no ``format`` key)."""
    folder.mkdir(parents=True)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    np.save(folder / "embeddings.npy", unit.astype(np.float32))
    (folder / "texts.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TEXTS), encoding="utf-8")
    meta = {"normalize": True, "backend": "exact", "size": len(vectors), "dim": vectors.shape[1]}
    (folder / "index.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def test_an_old_search_cache_opens_with_the_one_reader(tmp_path: Path) -> None:
    vectors = np.random.default_rng(0).standard_normal((40, 8)).astype(np.float32)
    folder = old_search_cache(tmp_path / "old", vectors)
    path, meta = read_meta(folder)
    assert path.name == "index.json" and meta["legacy"] == "index.json"
    assert (meta["format"], meta["type"], meta["count"], meta["dim"]) == (FORMAT, "exact", 40, 8)
    index = open_index(folder)
    assert not is_ann_index(folder) and index.kind == "exact" and len(index) == 40
    queries = np.random.default_rng(1).standard_normal((5, 8)).astype(np.float32)
    _, ids = index.search(queries, 3)
    np.testing.assert_array_equal(ids, cosine_top(vectors, queries, 3))
    assert index.texts(ids[0]) == [TEXTS[i] for i in ids[0]]
    assert len(load_index(folder)) == 40  # the search command's own loader reads it too
    served = load_search_index(folder, 8)
    assert served.texts[int(ids[0, 0])] == TEXTS[ids[0, 0]] and served.summary()["type"] == "exact"
    with pytest.raises(ValueError, match="gives 5"):
        load_search_index(folder, 5)


def test_a_new_search_cache_carries_the_family_header_and_the_old_keys(tmp_path: Path) -> None:
    vectors = np.random.default_rng(2).standard_normal((40, 8)).astype(np.float32)
    folder = ExactIndex(vectors, texts=TEXTS).save(tmp_path / "new")
    meta = json.loads((folder / "index.json").read_text())
    assert (meta["format"], meta["type"], meta["count"], meta["dim"]) == (FORMAT, "exact", 40, 8)
    # the keys an older sentcl's reader required: it still opens a cache written now
    assert meta["normalize"] is True and meta["size"] == 40 and meta["backend"] == "exact"
    assert "legacy" not in read_meta(folder)[1]


def test_an_old_built_index_opens_with_the_one_reader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``sentcl index build`` folder of before the family: ``faiss.json``, format sentcl-faiss-index."""
    shards, vectors = write_shards(tmp_path)
    new = build_from_shards(shards, tmp_path / "new", "ivf", IndexParams(nlist=8, tune_queries=100))
    old = tmp_path / "old"
    old.mkdir()
    for f in new.iterdir():
        if f.name != "index.json":
            (old / f.name).write_bytes(f.read_bytes())
    meta = json.loads((new / "index.json").read_text())
    (old / "faiss.json").write_text(json.dumps({**meta, "format": "sentcl-faiss-index"}), encoding="utf-8")
    assert is_ann_index(old) and read_meta(old)[1]["legacy"] == "faiss.json"
    queries = vectors[:20] + 0.05
    np.testing.assert_array_equal(
        open_index(old).search(queries, 5)[1], open_index(new).search(queries, 5)[1]
    )
    assert open_index(old).setting() == {"nprobe": meta["params"]["nprobe"]}
    assert main(["index", "info", str(old)]) == 0
    assert json.loads(capsys.readouterr().out)["type"] == "ivf"
    (old / "faiss.json").write_text(json.dumps({**meta, "format": "other"}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"faiss\.json: not a sentcl faiss index \(format 'other'\)"):
        open_index(old)


def test_index_info_reads_a_search_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vectors = np.random.default_rng(3).standard_normal((40, 8)).astype(np.float32)
    folder = ExactIndex(vectors, texts=TEXTS).save(tmp_path / "cache")
    assert main(["index", "info", str(folder)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["search"] == {"type": "exact", "size": 40, "dim": 8, "recall_at_10": 1.0}


@given(
    st.dictionaries(
        st.sampled_from(["format", "type", "dim", "count", "normalize", "size", "backend"]),
        st.one_of(
            st.none(), st.booleans(), st.integers(-2, 50), st.sampled_from(["sentcl-index", "exact", "ivf"])
        ),
    )
)
def test_any_header_opens_or_is_refused_naming_the_file(meta: dict) -> None:
    """Generated headers: read into the family's form, or a ValueError naming index.json; nothing else."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "index.json").write_text(json.dumps(meta), encoding="utf-8")
        try:
            _, read = read_meta(tmp)
        except ValueError as err:
            assert "index.json" in str(err)
            return
        assert read["format"] == FORMAT and isinstance(read["type"], str)
        assert all(type(read[k]) is int and read[k] >= 0 for k in ("dim", "count"))
        if "format" not in meta:
            assert read["type"] == "exact" and isinstance(meta["normalize"], bool)
