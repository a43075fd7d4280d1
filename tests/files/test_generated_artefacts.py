"""Property tests over the sentcl artefacts that no other generated test reaches: the shard manifest and its
shard records (read by ``ShardSet`` and by a resumed encode), a run summary's ``config.json``, the report
cache, the folder marker ``.sentcl`` and the fingerprint cache's entries. Each file, as sentcl wrote it, is
truncated, overwritten with random bytes, or has one field (at any depth) swapped to a value of another
type; the reader then gives the right answer or a ``ValueError`` / ``OSError`` naming the file, never
another exception (a traceback for the user), and a resumed encode repairs or names what it cannot use."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sentcl.data.shards import ShardSet, encode_shards
from sentcl.files import fingerprint
from sentcl.files.artefacts import REPORT_CACHE, RUN_CONFIG
from sentcl.files.output import read_marker, write_marker
from sentcl.files.read import read_typed_json
from tests.index.index_fixtures import Fixed, clustered

HYP = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
OTHER_TYPES = st.sampled_from([None, True, -7, 1e20, float("nan"), "text", [], [1, "a"], {}, {"x": 1}])
VECTORS = clustered(30, 8, 0)


def leaf_paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside parsed JSON (objects by key, lists by index), the root left out."""
    out: list[tuple[Any, ...]] = [at] if at else []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        out += leaf_paths(child, (*at, key))
    return out


def swapped(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A copy of ``value`` with the field at ``path`` set to ``new``."""
    value = json.loads(json.dumps(value))
    node = value
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return value


def damage(path: Path, how: str, data: st.DataObject) -> None:
    """Truncate ``path``, overwrite it with random bytes, or swap one of its JSON fields to another type."""
    text = path.read_bytes()
    at = data.draw(st.integers(0, 1 << 20))  # taken modulo what the file holds: the same draws every time
    if how == "truncate":
        path.write_bytes(text[: at % max(len(text), 1)])
    elif how == "bytes":
        path.write_bytes(data.draw(st.binary(max_size=200)))
    else:
        value = json.loads(text)
        paths = leaf_paths(value)
        where = paths[at % len(paths)]
        path.write_text(json.dumps(swapped(value, where, data.draw(OTHER_TYPES))), encoding="utf-8")


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gen_shards")
    corpus = root / "corpus.txt"
    corpus.write_text("".join(f"line {i}\n" for i in range(30)), encoding="utf-8")
    encode_shards(Fixed(VECTORS), corpus, root / "emb", 10, model_name="fixed")
    return root


HOW = st.sampled_from(["truncate", "bytes", "field"])


@HYP
@given(name=st.sampled_from(["manifest.json", "shard-00001.json"]), how=HOW, data=st.data())
def test_a_damaged_shard_manifest_or_record_is_read_repaired_or_named(
    shards: Path, tmp_path_factory: pytest.TempPathFactory, name: str, how: str, data: st.DataObject
) -> None:
    root = tmp_path_factory.mktemp("g")
    shutil.copytree(shards, root, dirs_exist_ok=True)
    damage(root / "emb" / name, how, data)
    try:
        got = ShardSet.open(root / "emb")
        rows = np.concatenate([got.array(i) for i in range(len(got.manifest["shards"]))])
    except (ValueError, OSError) as err:
        assert str(root / "emb") in str(err), err
    else:
        np.testing.assert_array_equal(rows, VECTORS)  # what it read is what was written
    # the same encode run again resumes, repairs, or refuses naming the folder; never another exception
    try:
        encode_shards(Fixed(VECTORS), root / "corpus.txt", root / "emb", 10, model_name="fixed")
    except (ValueError, OSError) as err:
        assert str(root / "emb") in str(err), err
    else:
        shards_again = ShardSet.open(root / "emb")
        np.testing.assert_array_equal(shards_again.gather(np.arange(30)), VECTORS)


CONFIG = {"model": {"name_or_path": "m"}, "training": {"output_dir": "runs/x", "seed": 1}, "eval": {}}
CACHE = {
    "results": {"stsb_dev": {"STSBenchmark": {"spearman": 80.0}}},
    "model": "m",
    "model_fingerprint": "ab",
}


@HYP
@given(which=st.sampled_from(["config", "cache"]), how=HOW, data=st.data())
def test_a_damaged_summary_config_or_report_cache_is_read_or_names_the_file(
    tmp_path_factory: pytest.TempPathFactory, which: str, how: str, data: st.DataObject
) -> None:
    path = tmp_path_factory.mktemp("j") / f"{which}.json"
    path.write_text(json.dumps(CONFIG if which == "config" else CACHE), encoding="utf-8")
    damage(path, how, data)
    try:
        value = read_typed_json(path, RUN_CONFIG if which == "config" else REPORT_CACHE, which)
    except ValueError as err:
        assert str(path) in str(err), err
    else:
        assert isinstance(value, dict)
        if which == "cache":
            assert all(isinstance(v, dict) for v in value["results"].values())


@HYP
@given(how=HOW, data=st.data())
def test_a_damaged_folder_marker_is_no_marker(
    tmp_path_factory: pytest.TempPathFactory, how: str, data: st.DataObject
) -> None:
    """A ``.sentcl`` marker that is not the JSON sentcl wrote makes the folder not provably sentcl's."""
    folder = tmp_path_factory.mktemp("m")
    write_marker(folder, "index")
    damage(folder / ".sentcl", how, data)
    marker = read_marker(folder)
    assert marker is None or (isinstance(marker, dict) and isinstance(marker["kind"], str))


@HYP
@given(how=HOW, data=st.data())
def test_a_damaged_fingerprint_cache_entry_is_hashed_again(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, how: str, data: st.DataObject
) -> None:
    root = tmp_path_factory.mktemp("fp")
    monkeypatch.setenv("SENTCL_CACHE", str(root / "cache"))
    target = root / "f.bin"
    target.write_bytes(b"some bytes\n" * 10)
    truth = fingerprint._hash_file(target)
    assert fingerprint.file_sha256(target) == truth
    entry = fingerprint._entry(str(target.resolve()))
    damage(entry, how, data)
    fingerprint._memo.clear()
    assert fingerprint.file_sha256(target) == truth  # a damaged entry is no entry: read again


SENTCL_JSON = {
    "pooler": "cls",
    "mlp_only_train": True,
    "max_length": 32,
    "normalize": False,
    "dense": ["2_Dense"],
    "truncate_dim": 16,
}


@HYP
@given(how=HOW, data=st.data())
def test_a_damaged_sentcl_json_is_read_or_names_the_file(
    tmp_path_factory: pytest.TempPathFactory, how: str, data: st.DataObject
) -> None:
    from sentcl.modeling.sentcl_json import read_sentcl_json

    folder = tmp_path_factory.mktemp("sj")
    (folder / "sentcl.json").write_text(json.dumps(SENTCL_JSON), encoding="utf-8")
    damage(folder / "sentcl.json", how, data)
    try:
        meta = read_sentcl_json(folder)
    except (ValueError, OSError) as err:
        assert "sentcl.json" in str(err), err
    else:
        assert meta is None or isinstance(meta, dict)


# ---- readers of the user's files that the other generated tests do not reach

TEXT = st.lists(
    st.sampled_from(
        [*'ab ,"\t\n\r{}[]:é\x00\u2028', "a dog", "sent0", "anchor", "positive", '"text"', '"_id"']
    ),
    max_size=40,
).map("".join)


@HYP
@given(text=TEXT, suffix=st.sampled_from([".csv", ".tsv", ".jsonl"]))
def test_mine_pairs_and_nli_tables_are_read_or_name_the_file(
    tmp_path_factory: pytest.TempPathFactory, text: str, suffix: str
) -> None:
    """``mine --pairs`` (``sentcl.index.pairs``) and the NLI readers over generated text: pairs of strings,
    or a user error naming the file; the file is never changed."""
    from sentcl.cli.options import USER_ERRORS
    from sentcl.data.nli import read_nli_csv, read_nli_jsonl
    from sentcl.index.pairs import read_pairs

    path = tmp_path_factory.mktemp("t") / f"in{suffix}"
    path.write_text(text, encoding="utf-8", newline="")
    before = path.read_bytes()
    readers = [lambda: read_pairs(path, None, None)]
    readers.append(lambda: read_nli_jsonl(path) if suffix == ".jsonl" else read_nli_csv(path))
    for read in readers:
        try:
            got = read()
        except USER_ERRORS as err:
            assert str(path) in str(err) or path.name in str(err), err
        else:
            examples = got if isinstance(got, list) else list(getattr(got, "examples", got))
            assert all(all(isinstance(x, str) for x in ex) for ex in examples)
    assert path.read_bytes() == before


@HYP
@given(which=st.sampled_from(["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"]), text=TEXT)
def test_a_beir_folder_with_any_file_damaged_is_read_or_names_it(
    tmp_path_factory: pytest.TempPathFactory, which: str, text: str
) -> None:
    from sentcl.cli.options import USER_ERRORS
    from sentcl.evaluation.retrieval_eval import read_beir

    folder = tmp_path_factory.mktemp("beir")
    (folder / "qrels").mkdir()
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "a dog"}\n{"_id": "d2", "text": "a cat"}\n')
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "dog"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    (folder / which).write_text(text, encoding="utf-8", newline="")
    try:
        beir = read_beir(folder)
    except USER_ERRORS as err:
        assert str(folder) in str(err), err
    else:
        assert beir is not None
