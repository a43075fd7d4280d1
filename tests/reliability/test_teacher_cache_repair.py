"""The teacher cache is sentcl's own: a damaged entry is repaired, never fatal and never reused as it is.

A shard cut in half, of another width, of fewer rows, saved as float64, deleted; a garbage manifest; NaN
written over a shard: each is one warning naming the damaged file and the problem, only the damaged shard is
encoded again, and the vectors equal the first encode's. A generated test damages any byte of any file of an
entry. A cache path that is a file (``model.teacher_cache``, ``$SENTCL_CACHE``) runs the
real ``sentcl train`` in-process: one error line naming the setting, nothing encoded."""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml
from harness import Case, parametrize, run_case
from helpers.data import tiny_recipe, write, write_corpus, write_small_sts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sentcl.config.teacher import TeacherConfig
from sentcl.methods import teacher_cache
from sentcl.methods.teacher_cache import teacher_vectors

TEXTS = [f"a text about the number {i}" for i in range(12)]
SHARD = 5  # three shards: 5, 5, 2 rows


def entry_of(cache: Path) -> Path:
    (entry,) = [p for p in cache.iterdir() if p.is_dir()]
    return entry


@pytest.fixture(scope="module")
def first(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """A sound entry (three shards) and its vectors, as the reference every repair must give back."""
    cache = tmp_path_factory.mktemp("teacher_cache")
    vectors = teacher_vectors(
        TeacherConfig(path=str(tiny_bert), pooler="avg"), TEXTS, cache, shard_size=SHARD
    )
    return cache, np.asarray(vectors.gather(np.arange(len(TEXTS))))


def shard(entry: Path, i: int = 0) -> Path:
    return entry / "vectors" / f"shard-{i:05d}.npy"


def resave(change: Callable[[np.ndarray], np.ndarray]) -> Callable[[Path], None]:
    def damage(entry: Path) -> None:
        np.save(shard(entry), change(np.load(shard(entry))))

    return damage


def cut(entry: Path) -> None:
    data = shard(entry).read_bytes()
    shard(entry).write_bytes(data[: len(data) // 2])


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "TC_trunc": (cut, r"shard-00000\.npy is truncated: it holds \d+ bytes, the cache records \d+"),
    "TC_shape": (resave(lambda a: a[:, :8].copy()), r"shard-00000\.npy is truncated"),
    "TC_rows": (resave(lambda a: a[:3].copy()), r"shard-00000\.npy is truncated"),
    "TC_f64": (resave(lambda a: a.astype(np.float64)), r"shard-00000\.npy has grown"),
    "TC_noshard": (lambda e: shard(e).unlink(), r"shard-00000\.npy is missing"),
    "TC_manifestgarb": (
        lambda e: (e / "vectors" / "manifest.json").write_text("{garbage"),
        r"manifest\.json: shard manifest is not valid JSON \(line 1, column 2",
    ),
    "TC_nan": (resave(lambda a: np.full_like(a, np.nan)), r"shard-00000\.npy changed since it was written"),
}


@pytest.mark.parametrize("row", list(DAMAGE))
def test_a_damaged_teacher_cache_entry_is_named_and_encoded_again(
    row: str,
    first: tuple[Path, np.ndarray],
    tiny_bert: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, reference = first
    teacher = TeacherConfig(path=str(tiny_bert), pooler="avg")
    teacher_vectors(teacher, TEXTS, tmp_path / "cache", shard_size=SHARD)  # an entry of its own, in place
    entry = entry_of(tmp_path / "cache")
    damage, expected = DAMAGE[row]
    damage(entry)
    encoded: list[int] = []
    real = teacher_cache.encode_shards
    monkeypatch.setattr(teacher_cache, "encode_shards", lambda *a, **k: encoded.append(1) or real(*a, **k))
    with caplog.at_level(logging.WARNING, logger="sentcl.methods.teacher_cache"):
        again = teacher_vectors(teacher, TEXTS, tmp_path / "cache", shard_size=SHARD)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and re.search(expected, warnings[0]), warnings
    assert str(entry) in warnings[0] and ("encoded again" in warnings[0] or "records are read" in warnings[0])
    assert encoded == [1]
    np.testing.assert_allclose(np.asarray(again.gather(np.arange(len(TEXTS)))), reference, atol=1e-6)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="sentcl.methods.teacher_cache"):
        teacher_vectors(teacher, TEXTS, tmp_path / "cache", shard_size=SHARD)
    assert "teacher vectors: reused" in caplog.text and "WARNING" not in caplog.text  # repaired for good


def test_a_moved_cache_is_reused_and_its_damage_repaired(
    first: tuple[Path, np.ndarray], tiny_bert: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A cache folder copied elsewhere: its sound entry is reused as it is; a damaged shard in it is encoded
    again (its records name the old folder, which a resume would refuse)."""
    cache, reference = first
    shutil.copytree(cache, tmp_path / "moved")
    teacher = TeacherConfig(path=str(tiny_bert), pooler="avg")
    with caplog.at_level(logging.INFO, logger="sentcl.methods.teacher_cache"):
        sound = teacher_vectors(teacher, TEXTS, tmp_path / "moved", shard_size=SHARD)
    assert "teacher vectors: reused" in caplog.text
    np.testing.assert_array_equal(np.asarray(sound.gather(np.arange(len(TEXTS)))), reference)
    cut(entry_of(tmp_path / "moved"))
    again = teacher_vectors(teacher, TEXTS, tmp_path / "moved", shard_size=SHARD)
    np.testing.assert_allclose(np.asarray(again.gather(np.arange(len(TEXTS)))), reference, atol=1e-6)
    assert (tmp_path / "moved" / entry_of(cache).name / "vectors" / "manifest.json").is_file()
    assert json.loads((entry_of(tmp_path / "moved") / "vectors" / "manifest.json").read_text())["complete"]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(min_value=0), at=st.integers(min_value=0), data=st.binary(min_size=1, max_size=64))
def test_any_damaged_byte_of_an_entry_gives_the_teachers_vectors_back(
    first: tuple[Path, np.ndarray],
    tiny_bert: Path,
    tmp_path_factory: pytest.TempPathFactory,
    which: int,
    at: int,
    data: bytes,
) -> None:
    """Any file of a sound entry (shards, offsets, records, manifest, texts, marker) overwritten at any place
    with random bytes: the vectors read back equal the first encode's (repaired, or the byte did not matter)."""
    cache, reference = first
    copy = tmp_path_factory.mktemp("hyp") / "cache"
    shutil.copytree(cache, copy)
    entry = entry_of(copy)
    files = sorted(p for p in entry.rglob("*") if p.is_file())
    target = files[which % len(files)]
    body = bytearray(target.read_bytes())
    start = at % max(len(body), 1)
    body[start : start + len(data)] = data
    target.write_bytes(bytes(body))
    got = teacher_vectors(TeacherConfig(path=str(tiny_bert), pooler="avg"), TEXTS, copy, shard_size=SHARD)
    np.testing.assert_allclose(np.asarray(got.gather(np.arange(len(TEXTS)))), reference, atol=1e-6)


# ---- the cache folder itself cannot be one: the real `sentcl train`, one error line naming the setting

ENV: dict[str, object] = {}


@pytest.fixture(autouse=True)
def _env(tiny_bert: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ENV["model"], ENV["patch"] = tiny_bert, monkeypatch


def distill(cache: str | None, env_file: bool = False) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        afile = write(folder, "afile.txt", "x\n")
        corpus = write_corpus(folder / "c.txt", 12)
        recipe = tiny_recipe(
            ENV["model"], write_small_sts(folder / "data"), corpus, folder / "run", max_steps=2
        )
        recipe["eval"]["final_tasks"] = []
        given = None if cache is None else str(folder / cache)
        recipe["model"].update(teacher=str(ENV["model"]), teacher_cache=given)
        recipe["objective"] = {"name": "distill_mse"}
        if env_file:
            ENV["patch"].setenv("SENTCL_CACHE", str(afile))  # undone after the test
        return ["train", "--config", str(write(folder, "r.yaml", yaml.safe_dump(recipe)))]

    return setup


def nothing_cached(folder: Path, _: str) -> None:
    assert (folder / "afile.txt").read_text() == "x\n"
    assert not list(folder.rglob("texts.txt"))


CACHE_FOLDER_CASES = [
    Case(
        "TS_cachefile",
        distill("afile.txt"),
        r"model\.teacher_cache: the teacher cache \S+afile\.txt is a file, not a folder",
        check=nothing_cached,
    ),
    Case(
        "EV_cache_file",
        distill(None, env_file=True),
        r"\$SENTCL_CACHE: the teacher cache \S+afile\.txt/teachers lies under \S+afile\.txt, which is a file",
        check=nothing_cached,
    ),
]


@parametrize(CACHE_FOLDER_CASES)
def test_a_teacher_cache_that_cannot_be_a_folder_names_its_setting(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_case(case, tmp_path, capsys)
