"""The stored digests keep their bytes now that sentcl.files.fingerprint makes them all: each helper equals the
formula the earlier code wrote (restated here with hashlib, json and numpy) on generated inputs, and the values
that code gave for fixed inputs (computed with it before the move, pinned below), so the teacher caches, shard
folders, indexes and search caches written before still verify."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sentcl.data.download import SOURCES, verify
from sentcl.data.fetch import DownloadError
from sentcl.data.shard_resume import SETTINGS_KEYS
from sentcl.files.fingerprint import (
    fields_sha256,
    file_sha256,
    line_offsets_sha256,
    lines_sha256,
    search_fingerprint,
    shards_fingerprint,
    text_sha256,
)
from sentcl.methods.teacher_cache import line_safe

TEXTS = ["A man plays the guitar.", "naïve café\nsecond line", "", "tab\there"]
MANIFEST = {
    "dim": 8,
    "shards": [
        {
            "file": "shard-00000.npy",
            "start_line": 1,
            "end_line": 3,
            "rows": 3,
            "offsets_sha256": "ab",
            "input_sha256": "cd",
            "files": {"x": {"bytes": 1, "sha256": "ef"}},
            "path": "/ignored",
        },
        "odd",
    ],
}
HEADER = {
    "model": "m",
    "model_sha256": None,
    "pooler": "cls",
    "max_length": 16,
    "truncate_dim": None,
    "normalize": True,
    "shard_size": 2,
    "input": "/x/c.txt",
    "other": 1,
}
CORPUS = b"one\ntwo\r\nthree\n\nfive"
# what the code before the move gave for these inputs (teacher_cache.texts_digest, index.search.fingerprint,
# data.vector_identity.shards_fingerprint, data.shard_resume.settings_sha256 / shard_offset_digests, download.sha256_of)
PINNED = {
    "texts": "eb169cd9d431eb093885140a14a1e7e85f58c02d4082ae0033a0ddd589d0c4ca",
    "search_corpus": "610373ed57135df63151c0cf5e4d3ddec78c990a4ff7e0e44b86323607a739e1",
    "search_model": "73f90fffc4525210112db602bfe17a26cd2ccbf9a7d93688f8356b687a38d1ab",
    "shards": "473877afa7dc8192628a09fc5fda5680229acc5a91e36641216941586e1f2427",
    "settings": "7f788fcd4c3074ab242fd9342232ebac7d688adfc87b22e2b437fad9318cc439",
    "offsets": [
        "f7548c023e431138b11357593f5cceb9dd35eb0b0a2041f0b1560212eeb6f13e",
        "ca24c2efb6926a31b9e13128a566a58412e1ad74cf21293ff43f639b4ef05ff2",
        "5eb6da0e0e522104c6d50b0748e6893762f7f2c00a7163a46ccbb535bfd61a0d",
    ],
    "file": "366d243279074ed91bbb015c6574bb340b85e63f38d41c5b0c76ecac7904fbaf",
}


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SENTCL_CACHE", str(tmp_path_factory.mktemp("fp-cache")))  # file_sha256's sidecar


one_line = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=20)


def test_the_digests_equal_what_the_earlier_code_stored(tmp_path: Path) -> None:
    assert lines_sha256(map(line_safe, TEXTS)) == PINNED["texts"]
    no_folder = search_fingerprint("no-such-model-name", "avg", 32, TEXTS)
    assert no_folder == {"corpus": PINNED["search_corpus"], "model": PINNED["search_model"]}
    assert shards_fingerprint(MANIFEST) == PINNED["shards"]
    assert fields_sha256(HEADER, SETTINGS_KEYS) == PINNED["settings"]
    (tmp_path / "c.txt").write_bytes(CORPUS)
    assert line_offsets_sha256(tmp_path / "c.txt", 2) == PINNED["offsets"]
    assert file_sha256(tmp_path / "c.txt", cached=False) == PINNED["file"]


@given(st.lists(one_line, max_size=8))
def test_lines_sha256_is_the_sha256_of_the_file_the_lines_make(lines: list[str]) -> None:
    made = "".join(f"{line}\n" for line in lines).encode("utf-8")
    assert lines_sha256(lines) == hashlib.sha256(made).hexdigest()
    assert lines_sha256(iter(lines)) == lines_sha256(lines)  # a generator streams the same bytes


unicode = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)  # no lone surrogates


@given(unicode, unicode)
def test_text_sha256_and_the_search_key_are_the_earlier_formulas(text: str, name: str) -> None:
    model = "missing-folder/" + name.replace("/", "_")  # no folder: the key takes the name itself
    assert text_sha256(text) == hashlib.sha256(text.encode("utf-8")).hexdigest()
    texts = text.split(" ")
    settings_json = json.dumps({"pooler": "cls", "max_length": None})
    assert search_fingerprint(model, "cls", None, texts) == {
        "corpus": hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest(),
        "model": hashlib.sha256(f"{model}\0{settings_json}".encode()).hexdigest(),
    }


values = st.none() | st.booleans() | st.integers(-5, 10**6) | one_line


@given(st.dictionaries(st.sampled_from([*SETTINGS_KEYS, "extra"]), values))
def test_fields_sha256_is_the_sorted_json_of_the_chosen_fields(header: dict) -> None:
    chosen = {k: header.get(k) for k in SETTINGS_KEYS}
    expected = hashlib.sha256(json.dumps(chosen, sort_keys=True).encode("utf-8")).hexdigest()
    assert fields_sha256(header, SETTINGS_KEYS) == expected


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")), max_size=12), st.booleans())
def test_line_offsets_sha256_hashes_each_block_of_line_starts(
    tmp_path: Path, lines: list[bytes], last_newline: bool
) -> None:
    data = b"\n".join(lines) + (b"\n" if last_newline and lines else b"")
    path = tmp_path / "in.txt"
    path.write_bytes(data)
    starts = [0] + [i + 1 for i, byte in enumerate(data) if byte == 10 and i + 1 < len(data)] if data else []
    for block in (1, 2, 5):
        chunks = [starts[i : i + block] for i in range(0, len(starts), block)]
        expected = [hashlib.sha256(np.asarray(c, dtype=np.int64).tobytes()).hexdigest() for c in chunks]
        assert line_offsets_sha256(path, block) == expected


def test_a_download_is_checked_against_its_sum_with_the_file_helper(tmp_path: Path) -> None:
    (tmp_path / "f.bin").write_bytes(CORPUS)
    source = replace(next(iter(SOURCES.values())), sha256=PINNED["file"])
    assert verify(source, tmp_path / "f.bin", tmp_path) is None  # the table's sum: vouched for
    with pytest.raises(DownloadError, match=f"expected sha256 {'0' * 64} .* got {PINNED['file']}"):
        verify(replace(source, sha256="0" * 64), tmp_path / "f.bin", tmp_path)
    assert not (tmp_path / "f.bin").exists()  # a file that is not the named one is discarded
