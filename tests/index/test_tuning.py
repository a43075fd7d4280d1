"""The recall target of `sentcl index build`: the stored recall and setting against a numpy exact search."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sentcl.cli import main
from sentcl.data.shards import encode_shards
from sentcl.index import open_index
from sentcl.index.faiss_build import build_from_shards
from sentcl.index.faiss_params import IndexParams
from tests.index.index_fixtures import Fixed, clustered, write_shards

pytest.importorskip("faiss")


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    return write_shards(tmp_path_factory.mktemp("tune"))


def numpy_recall(index_dir: Path, vectors: np.ndarray, queries: np.ndarray, **setting: int) -> float:
    """Recall@10 of the opened index at ``setting`` against a brute-force numpy search by cosine (a found row
    as close as the 10th best counts: ``tie_aware_recall``)."""
    _, ids = open_index(index_dir, **setting).search(queries, 10)
    return tie_aware_recall(ids, vectors, queries)


@pytest.mark.parametrize(("kind", "key"), [("ivf", "nprobe"), ("hnsw", "ef_search"), ("ivfpq", "nprobe")])
def test_tuned_setting_is_the_cheapest_reaching_the_target(
    shards: tuple[Path, np.ndarray], tmp_path: Path, kind: str, key: str
) -> None:
    folder, vectors = shards
    queries = clustered(300, 16, 7)[:300]  # fresh draws of the same mixture, not corpus rows
    np.save(tmp_path / "q.npy", queries)
    params = IndexParams(nlist=64, hnsw_m=4, ef_construction=16, pq_m=4)
    out = build_from_shards(folder, tmp_path / kind, kind, params, queries=tmp_path / "q.npy")
    tuned = json.loads((out / "index.json").read_text())["tuning"]
    setting = tuned["setting"]
    assert tuned["reached"] and tuned["recall_at_10"] >= 0.95
    measured = numpy_recall(out, vectors, queries)  # opened at the stored setting
    assert measured == pytest.approx(tuned["recall_at_10"], abs=1e-4)
    assert open_index(out).setting() == setting
    lower = [
        r[key] for r in tuned["sweep"] if r[key] < setting[key] and r.get("refine") == setting.get("refine")
    ]
    if lower:  # the step below on the ladder misses the target, measured independently
        assert numpy_recall(out, vectors, queries, **{**setting, key: max(lower)}) < 0.95
    if kind == "ivfpq":  # a refine factor up to 8 reached it: no escalation was tried
        assert {r["refine"] for r in tuned["sweep"]} == {1, 2, 4, 8}


def test_ivfpq_refine_escalates_when_the_codes_are_too_coarse(
    shards: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    """One 5-bit code per 16-d vector: refine 8 scanning every cell stays under the target (measured here
    with numpy too), so the tuning doubles the refine factor until one reaches it, and stops there."""
    folder, vectors = shards
    queries = clustered(300, 16, 7)[:300]
    np.save(tmp_path / "q.npy", queries)
    params = IndexParams(nlist=64, pq_m=1, pq_bits=5)
    out = build_from_shards(folder, tmp_path / "coarse", "ivfpq", params, queries=tmp_path / "q.npy")
    tuned = json.loads((out / "index.json").read_text())["tuning"]
    refines = [r["refine"] for r in tuned["sweep"]]
    assert tuned["reached"] and tuned["setting"]["refine"] > 8
    chosen = tuned["setting"]["refine"]
    assert sorted(set(refines)) == [r for r in (1, 2, 4, 8, 16, 32, 64) if r <= chosen]  # none after it
    assert numpy_recall(out, vectors, queries) == pytest.approx(tuned["recall_at_10"], abs=1e-4)
    assert numpy_recall(out, vectors, queries) >= 0.95
    assert numpy_recall(out, vectors, queries, nprobe=64, refine=8) < 0.95
    params = IndexParams(nlist=64, pq_m=1, pq_bits=5, refine=8)  # an explicit refine is kept, not escalated
    out = build_from_shards(folder, tmp_path / "fixed", "ivfpq", params, queries=tmp_path / "q.npy")
    tuned = json.loads((out / "index.json").read_text())["tuning"]
    assert {r["refine"] for r in tuned["sweep"]} == {8} and not tuned["reached"]


def test_held_out_corpus_rows_and_explicit_setting(shards: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    folder, vectors = shards
    out = build_from_shards(folder, tmp_path / "ivf", "ivf", IndexParams(nlist=64))
    tuned = json.loads((out / "index.json").read_text())["tuning"]
    assert "200 corpus rows held out" in tuned["queries"] and tuned["recall_at_10"] >= 0.99
    # on other queries of the same mixture (corpus rows moved by noise) the tuned index also holds
    near = vectors[::10] + 0.1 * np.random.default_rng(3).standard_normal((200, 16)).astype(np.float32)
    assert numpy_recall(out, vectors, near) >= 0.9
    fixed = build_from_shards(folder, tmp_path / "fixed", "ivf", IndexParams(nlist=64, nprobe=1))
    meta = json.loads((fixed / "index.json").read_text())
    assert meta["tuning"]["setting"] == {"nprobe": 1} and meta["params"]["nprobe"] == 1
    assert [r["nprobe"] for r in meta["tuning"]["sweep"]] == [1]  # measured, not tuned
    rows = np.load(fixed / "rows.npy")  # the held-out rows were added last: ids -> rows is a permutation
    assert sorted(rows.tolist()) == list(range(2000)) and list(rows[-200:]) == sorted(rows[-200:])
    _, ids = open_index(fixed).search(vectors[rows[-5:]], 1)
    assert ids[:, 0].tolist() == rows[-5:].tolist()  # a held-out row finds itself under its own row id


def test_cli_build_info_and_search_override(
    shards: tuple[Path, np.ndarray], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, vectors = shards
    out = tmp_path / "idx"
    argv = [
        "index",
        "build",
        "--embeddings",
        str(folder),
        "--type",
        "ivf",
        "--nlist",
        "64",
        "--output",
        str(out),
    ]
    assert main([*argv, "--target-recall", "0.9"]) == 0
    printed = capsys.readouterr().out
    meta = json.loads((out / "index.json").read_text())
    nprobe = meta["params"]["nprobe"]
    assert meta["tuning"]["tuned_to"] == pytest.approx(0.98)  # held-out corpus rows, ivf: 1 - (1 - 0.9) / 5
    assert meta["tuning"]["recall_at_10"] >= 0.98
    assert f"nprobe {nprobe}: recall@10 {meta['tuning']['recall_at_10']:.4f} (target 0.9 reached" in printed
    assert main(["index", "info", str(out)]) == 0
    captured = capsys.readouterr()
    info = json.loads(captured.out)
    assert info["search"]["setting"] == {"nprobe": nprobe}
    assert info["search"]["recall_at_10"] == meta["tuning"]["recall_at_10"]
    assert "recall@10" in captured.err
    assert open_index(out, nprobe=64).setting() == {"nprobe": 64}  # a later --nprobe overrides
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--target-recall", "1.5"])
    assert exit_info.value.code == 2
    assert "expected a number in (0, 1]" in capsys.readouterr().err


def tie_aware_recall(found: np.ndarray, vectors: np.ndarray, queries: np.ndarray, k: int = 10) -> float:
    """An independent reference: a found row is right when its cosine is within 1e-5 of the numpy k-th best."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    cos = q @ unit.T  # (Q, N)
    kth = np.sort(cos, axis=1)[:, -k]  # (Q,)
    return float(
        np.mean(
            [
                len({int(i) for i in row if i >= 0 and cos[r, i] >= kth[r] - 1e-5}) / k
                for r, row in enumerate(found)
            ]
        )
    )


@pytest.mark.parametrize("kind", ["ivf", "hnsw", "ivfpq", "binary", "int8"])
@pytest.mark.parametrize("share", [1.0, 0.8])
def test_duplicate_vectors_are_ties_not_misses(tmp_path: Path, kind: str, share: float) -> None:
    """A corpus repeating one sentence (all rows, or 80% of them beside distinct ones): any 10 of the tied
    rows are exact, so a search that returns them has recall 1.0, stored as reached."""
    n = 1500
    vectors = clustered(n, 16, 3)
    vectors[: int(n * share)] = vectors[0]  # the repeated sentence's vector
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"sentence {i}\n" for i in range(n)), encoding="utf-8")
    encode_shards(Fixed(vectors), corpus, tmp_path / "emb", 500, model_name="fixed")
    queries = np.concatenate([vectors[:50], clustered(50, 16, 9)])  # the repeated vector itself, and others
    np.save(tmp_path / "q.npy", queries)
    params = IndexParams(nlist=16, hnsw_m=4, ef_construction=16, pq_m=4)
    out = build_from_shards(tmp_path / "emb", tmp_path / kind, kind, params, queries=tmp_path / "q.npy")
    tuned = json.loads((out / "index.json").read_text())["tuning"]
    _, found = open_index(out).search(queries, 10)  # at the stored setting
    assert tuned["recall_at_10"] == pytest.approx(tie_aware_recall(found, vectors, queries), abs=1e-4)
    assert tuned["tied_queries"] >= 50
    if share == 1.0:  # every row tied: any search that returns 10 rows is perfect, on held-out rows too
        assert tuned["recall_at_10"] == 1.0 and tuned["reached"]
        held = build_from_shards(tmp_path / "emb", tmp_path / f"{kind}-held", kind, params)
        tuned = json.loads((held / "index.json").read_text())["tuning"]
        assert tuned["recall_at_10"] == 1.0 and tuned["reached"] and tuned["tied_queries"] == 150


def test_ties_count_only_as_close_as_the_kth_best() -> None:
    """The score rule does not inflate recall: a found row farther than the k-th best is a miss."""
    from sentcl.index.tuning import recall

    exact = np.array([[0, 1, 2]])
    kth = np.array([0.9], dtype=np.float32)
    found = np.array([[0, 5, 6]])
    assert recall(found, exact) == pytest.approx(1 / 3)
    assert recall(found, exact, np.array([[1.0, 0.9, 0.5]], dtype=np.float32), kth) == pytest.approx(2 / 3)
    assert recall(np.array([[7, 8, -1]]), exact, np.array([[0.9, 0.9, -np.inf]]), kth) == pytest.approx(2 / 3)
