"""The integrity model: every artefact records the SHA-256 of its files, readers refuse a changed byte, an
index refuses shards that changed, a resume refuses other settings: bit rot in index.faiss (in search and in
serve), permuted rows, a stale index, a model changed under the same fingerprint, an encode resumed with
another model or other settings, a zeroed or stale teacher cache.
Artefacts written before the records existed still open (their stated behaviour is tested last)."""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.shards import encode_argv
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sentcl.cli import main
from sentcl.data.shards import ShardSet, encode_shards
from sentcl.files.fingerprint import IntegrityError
from sentcl.index.faiss_build import build_from_shards
from sentcl.index.faiss_index import open_index
from tests.index.index_fixtures import Fixed, clustered

HYP = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def flip(path: Path, at: int, bit: int = 0) -> None:
    """Flip one bit of ``path`` at ``at`` (modulo its size): same size, other contents."""
    data = bytearray(path.read_bytes())
    data[at % len(data)] ^= 1 << bit
    path.write_bytes(bytes(data))


def build_flat_index(shards: Path, out: Path) -> int:
    """``sentcl index build`` of an exact (flat) index over a shard folder; the CLI's exit status."""
    return main(["index", "build", "--embeddings", str(shards), "--type", "flat", "--output", str(out)])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Shards of 120 clustered 8-d vectors (3 shards) and a flat and an ivf index over them."""
    root = tmp_path_factory.mktemp("integrity")
    corpus = root / "corpus.txt"
    corpus.write_text("".join(f"line {i}\n" for i in range(120)), encoding="utf-8")
    encode_shards(Fixed(clustered(120, 8, 0)), corpus, root / "emb", 40, model_name="fixed")
    build_from_shards(root / "emb", root / "flat", "flat")
    build_from_shards(root / "emb", root / "ivf", "ivf", seed=0)
    return root


def copy_of(built: Path, tmp: Path) -> Path:
    """A fresh copy of the built folder (the index records the shards' absolute path: repointed)."""
    shutil.copytree(built, tmp, dirs_exist_ok=True)
    for kind in ("flat", "ivf"):
        meta_file = tmp / kind / "index.json"
        meta = json.loads(meta_file.read_text())
        meta["embeddings"] = str(tmp / "emb")
        meta_file.write_text(json.dumps(meta))
    return tmp


@HYP
@given(at=st.integers(min_value=0), bit=st.integers(0, 7), kind=st.sampled_from(["flat", "ivf"]))
def test_one_changed_byte_of_index_faiss_is_refused(
    built: Path, tmp_path_factory: pytest.TempPathFactory, at: int, bit: int, kind: str
) -> None:
    folder = copy_of(built, tmp_path_factory.mktemp("c"))
    open_index(folder / kind)  # untouched: opens
    flip(folder / kind / "index.faiss", at, bit)
    with pytest.raises(
        IntegrityError, match=r"index\.faiss changed since it was written: .*rebuild the index"
    ):
        open_index(
            folder / kind
        )  # before faiss parses it (a damaged header can make faiss allocate unbounded)


@HYP
@given(shard=st.integers(0, 2), name=st.sampled_from(["npy", "offsets.npy"]), at=st.integers(min_value=0))
def test_one_changed_byte_of_a_shard_is_refused(
    built: Path, tmp_path_factory: pytest.TempPathFactory, shard: int, name: str, at: int
) -> None:
    folder = copy_of(built, tmp_path_factory.mktemp("s"))
    path = folder / "emb" / f"shard-{shard:05d}.{name}"
    flip(path, at)
    with pytest.raises(ValueError, match=re.escape(path.name)):  # the digest, or the .npy header's own check
        ShardSet.open(folder / "emb").array(shard)
    assert set(ShardSet.open(folder / "emb").damaged()) == {shard}


def test_bit_rot_in_the_middle_of_index_faiss_is_refused_fxc_flat_mid(
    built: Path, tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """4 KiB of random bytes in the middle: the search exits 2 naming the file (it printed cosine 1.2e37)."""
    folder = copy_of(built, tmp_path)
    path = folder / "flat" / "index.faiss"
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid - 128 : mid + 128] = np.random.default_rng(0).bytes(256)  # the file is small: 256 bytes
    path.write_bytes(bytes(data))
    code = main(["search", "--model", str(tiny_bert), "--index", str(folder / "flat"), "--query", "a"])
    err = capsys.readouterr().err
    assert code == 2 and "index.faiss changed since it was written" in err and "Traceback" not in err


def rot_the_middle(path: Path, size: int = 4096) -> None:
    """``size`` random bytes over the middle of ``path`` (4 KiB of bit rot), the size kept."""
    data = bytearray(path.read_bytes())
    size = min(size, len(data) // 2)
    mid = len(data) // 2
    data[mid - size // 2 : mid - size // 2 + size] = np.random.default_rng(1).bytes(size)
    path.write_bytes(bytes(data))


def test_bit_rot_in_an_ivfpq_index_is_refused_fxc_ivfpq_mid(tmp_path: Path) -> None:
    """FXC_ivfpq_mid: 4 KiB of random bytes in the middle of an IVF-PQ index.faiss gave other hits (0.21
    instead of 0.41), exit 0. The codes hold no impossible score to see: only the recorded digest can tell."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"line {i}\n" for i in range(2000)), encoding="utf-8")
    encode_shards(Fixed(clustered(2000, 16, 3)), corpus, tmp_path / "emb", 1000, model_name="fixed")
    build_from_shards(tmp_path / "emb", tmp_path / "pq", "ivfpq", seed=0)
    open_index(tmp_path / "pq")  # untouched: opens
    rot_the_middle(tmp_path / "pq" / "index.faiss")
    with pytest.raises(
        IntegrityError, match=r"index\.faiss changed since it was written: .*rebuild the index"
    ):
        open_index(tmp_path / "pq")


def test_the_service_refuses_a_bit_rotted_index_at_start_up_sv_idx_flat_mid(
    built: Path, tmp_path: Path, tiny_encoder: Any, tiny_bert: Path
) -> None:
    """SV_idx_flat_mid: serve --index over a bit-rotted index.faiss answered score 1.19e37. The service's
    index loader (what ``sentcl serve --index`` runs before it binds) now refuses it naming the file."""
    from sentcl.serve.index import load_search_index

    folder = copy_of(built, tmp_path)
    rot_the_middle(folder / "flat" / "index.faiss", 256)
    with pytest.raises(IntegrityError, match=r"index\.faiss changed since it was written"):
        load_search_index(folder / "flat", tiny_encoder, str(tiny_bert), allow_model_mismatch=True)


def test_a_permuted_row_map_is_refused_fx_rows_perm(built: Path, tmp_path: Path) -> None:
    folder = copy_of(built, tmp_path)
    rows = folder / "ivf" / "rows.npy"
    if not rows.is_file():
        pytest.skip("this ivf build held no rows out")  # tuning on: it does; kept honest if that changes
    np.save(rows, np.load(rows)[::-1].copy())
    with pytest.raises(IntegrityError, match=r"rows\.npy changed since it was written"):
        open_index(folder / "ivf")


def test_an_index_refuses_re_encoded_shards_ix_stale_index(
    tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The corpus edited, the same encode rerun (it re-encodes in place), then the old index is searched."""
    corpus = tmp_path / "corpus.txt"
    lines = [f"sentence number {i} about a dog" for i in range(30)]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    encode = ["encode", "--model", str(tiny_bert), "--input", str(corpus), "--output", str(tmp_path / "sh")]
    assert main([*encode, "--shard-size", "10"]) == 0
    assert build_flat_index(tmp_path / "sh", tmp_path / "ix") == 0
    search = ["search", "--model", str(tiny_bert), "--index", str(tmp_path / "ix"), "--query", "a dog"]
    assert main(search) == 0
    corpus.write_text("\n".join(reversed(lines)) + "\n", encoding="utf-8")
    assert main([*encode, "--shard-size", "10"]) == 0
    capsys.readouterr()
    assert main(search) == 2
    err = capsys.readouterr().err
    assert "changed since this index was built from them" in err and "sentcl index build --embeddings" in err


def test_a_model_whose_middle_bytes_changed_is_another_model(
    tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """IX_model_changed_same_fp and IX_model_changed_encode_resume: weights changed in the middle, same size."""
    model = tmp_path / "model"
    shutil.copytree(tiny_bert, model)
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"word {i}\n" for i in range(20)), encoding="utf-8")
    encode = encode_argv(model, corpus, tmp_path / "sh")
    assert main(encode) == 0
    assert build_flat_index(tmp_path / "sh", tmp_path / "ix") == 0
    weights = next(model.glob("*.safetensors"))
    size = weights.stat().st_size
    flip(weights, size // 2 - (size // 2) % 4)  # the lowest byte of a float in the middle of the file
    assert weights.stat().st_size == size
    capsys.readouterr()
    assert main(["search", "--model", str(model), "--index", str(tmp_path / "ix"), "--query", "word"]) == 2
    assert "was built with another encoder: model" in capsys.readouterr().err
    assert main(encode) == 2
    assert re.search(r"holds shards of another encode \(model_sha256: ", capsys.readouterr().err)


def test_a_killed_multi_process_encode_is_not_resumed_with_other_settings_di_resume_other_settings(
    tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"word {i}\n" for i in range(30)), encoding="utf-8")
    encode = encode_argv(tiny_bert, corpus, tmp_path / "sh")
    assert main(encode) == 0
    (tmp_path / "sh" / "manifest.json").unlink()  # what a killed torchrun encode leaves: shards, no manifest
    (tmp_path / "sh" / "shard-00002.json").unlink()
    before = {p.name: p.read_bytes() for p in (tmp_path / "sh").glob("shard-*")}
    capsys.readouterr()
    assert main([*encode, "--max-length", "8"]) == 2
    err = capsys.readouterr().err
    assert (
        "holds shards of another encode (2 finished shard(s) of other settings" in err and "max_length" in err
    )
    assert {p.name: p.read_bytes() for p in (tmp_path / "sh").glob("shard-*")} == before
    assert main(encode) == 0  # the same settings: resumed


def test_a_teacher_cache_entry_with_a_damaged_shard_is_encoded_again_tc_zero(
    tiny_bert: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from sentcl.config.teacher import TeacherConfig
    from sentcl.methods.teacher_cache import teacher_vectors

    teacher = TeacherConfig(path=str(tiny_bert), pooler="avg")
    texts = [f"a text {i}" for i in range(12)]
    first = np.asarray(teacher_vectors(teacher, texts, tmp_path, shard_size=5).gather(range(12)))
    shard = next(tmp_path.glob("*/vectors/shard-00001.npy"))
    np.save(shard, np.zeros((5, first.shape[1]), dtype=np.float32))  # same size, all zero
    with caplog.at_level(logging.WARNING):
        again = teacher_vectors(teacher, texts, tmp_path, shard_size=5)
    assert (
        "shard-00001.npy changed since it was written" in caplog.text
        and "its shard is encoded again" in caplog.text
    )
    np.testing.assert_allclose(np.asarray(again.gather(range(12))), first, atol=1e-6)


def test_a_teacher_changed_in_place_gets_a_new_cache_entry_ts_teach1_stale(
    tiny_bert: Path, tmp_path: Path
) -> None:
    from sentcl.config.teacher import TeacherConfig
    from sentcl.methods.teacher_cache import teacher_vectors

    model = tmp_path / "teacher"
    shutil.copytree(tiny_bert, model)
    teacher = TeacherConfig(path=str(model), pooler="avg")
    texts = [f"a text {i}" for i in range(6)]
    a = teacher_vectors(teacher, texts, tmp_path / "cache")
    weights = next(model.glob("*.safetensors"))
    flip(weights, weights.stat().st_size // 2 - (weights.stat().st_size // 2) % 4)
    b = teacher_vectors(teacher, texts, tmp_path / "cache")
    assert a.folder != b.folder and len([p for p in (tmp_path / "cache").iterdir() if p.is_dir()]) == 2


def test_artefacts_written_before_the_records_still_open(built: Path, tmp_path: Path) -> None:
    """Stated behaviour: shards and indexes with no SHA-256 records open unchecked; an index that records
    the sampled ``model_fingerprint`` of older versions is compared with the search's model by path."""
    folder = copy_of(built, tmp_path)
    manifest_file = folder / "emb" / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    for rec in manifest["shards"]:
        for key in ("files", "settings", "settings_sha256", "input_sha256"):
            rec.pop(key)
    manifest_file.write_text(json.dumps(manifest))
    meta_file = folder / "flat" / "index.json"
    meta = json.loads(meta_file.read_text())
    for key in ("files", "shards_sha256", "model_sha256"):
        meta.pop(key, None)
    meta["model_fingerprint"] = "sampled-old-style"
    meta_file.write_text(json.dumps(meta))
    flip(folder / "emb" / "shard-00000.npy", 200)  # no record: not seen (what the records now catch)
    index = open_index(folder / "flat")
    assert index.search(np.ones((1, 8), dtype=np.float32), 3)[1].shape == (1, 3)
    assert ShardSet.open(folder / "emb").damaged() == {}


def test_a_resume_with_another_number_of_processes_is_refused_di_resume_ws1(
    tiny_bert: Path, tmp_path: Path
) -> None:
    """The run recorded 2 processes (global batch 16); a resume with 1 would halve the in-batch negatives."""
    import yaml
    from helpers.data import tiny_recipe, write_corpus, write_small_sts

    from sentcl.config import ConfigError, TrainConfig, load_config, to_dict
    from sentcl.files.fingerprint import file_sha256
    from sentcl.training.run_folder import resume_changes

    corpus = write_corpus(tmp_path / "c.txt", 20)
    out = tmp_path / "run"
    out.mkdir()
    (tmp_path / "r.yaml").write_text(
        yaml.safe_dump(tiny_recipe(tiny_bert, write_small_sts(tmp_path / "d"), corpus, out)), encoding="utf-8"
    )
    cfg = load_config(TrainConfig, tmp_path / "r.yaml", [])
    (out / "config.json").write_text(json.dumps(to_dict(cfg)), encoding="utf-8")
    data = {"event": "data", "path": str(corpus), "sha256": file_sha256(corpus)}
    (out / "metrics.jsonl").write_text(json.dumps({**data, "world_size": 2}) + "\n", encoding="utf-8")
    with pytest.raises(
        ConfigError,
        match=r"processes: the run was trained with 2 \(global batch 16\), this resume has 1 \(global batch 8\).*--nproc-per-node 2",
    ):
        resume_changes(out, cfg, corpus)
    (out / "metrics.jsonl").write_text(json.dumps({**data, "world_size": 1}) + "\n", encoding="utf-8")
    assert resume_changes(out, cfg, corpus) == []
    (out / "metrics.jsonl").write_text(
        json.dumps({"event": "data", "fingerprint": "4d8c3f1078ebabf8"}) + "\n", encoding="utf-8"
    )
    assert (
        resume_changes(out, cfg, corpus) == []
    )  # a run of an older sentcl: no world size recorded, not judged
    corpus.write_text("other contents\n" * 20, encoding="utf-8")
    (out / "metrics.jsonl").write_text(json.dumps({**data, "world_size": 1}) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"has other contents than the run's"):
        resume_changes(out, cfg, corpus)


# ---- what a record may name: a crafted or damaged index.json names files outside its folder, special files,
# or nothing at all (files.fingerprint.verify_records, files.pathcheck: one rule for every record)


def with_record(folder: Path, name: str, rec: dict[str, Any] | None = None) -> Path:
    """``folder``'s flat index with one more file record ``name`` (5 bytes, a zero digest by default)."""
    meta_file = folder / "flat" / "index.json"
    meta = json.loads(meta_file.read_text())
    meta["files"][name] = rec or {"bytes": 5, "sha256": "0" * 64}
    meta_file.write_text(json.dumps(meta))
    return folder / "flat"


OUTSIDE = st.one_of(
    st.sampled_from(["/etc/hostname", "/dev/zero", "../emb/manifest.json", "../../../../etc/hostname"]),
    st.lists(st.sampled_from(["..", "a", "b", "."]), min_size=1, max_size=6)
    .filter(lambda parts: ".." in parts)
    .map("/".join),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00/"), min_size=1, max_size=8).map(
        lambda name: f"/tmp/{name}"
    ),
)


@HYP
@given(name=OUTSIDE)
def test_a_record_naming_a_file_outside_its_folder_is_refused_unread(
    built: Path, tmp_path_factory: pytest.TempPathFactory, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = copy_of(built, tmp_path_factory.mktemp("outside"))
    index = with_record(folder, name)
    with pytest.raises(IntegrityError, match=r"outside .*: refusing a crafted record") as err:
        open_index(index)
    assert "bytes" not in str(err.value)  # nothing about the named file is disclosed
    assert main(["verify", "--full", str(index)]) == 2
    out = capsys.readouterr().out
    assert "refusing a crafted record" in out and "holds" not in out


@pytest.mark.parametrize("kind", ["fifo", "device", "folder", "index_faiss_fifo"])
def test_a_special_file_where_a_record_names_a_file_is_named_as_what_it_is(
    built: Path, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    folder = copy_of(built, tmp_path)
    index = folder / "flat"
    if kind == "index_faiss_fifo":
        (index / "index.faiss").unlink()
        os.mkfifo(index / "index.faiss")
        target, said = index / "index.faiss", "is a FIFO (named pipe), not a regular file"
    else:
        target = index / "extra"
        if kind == "fifo":
            os.mkfifo(target)
        elif kind == "device":
            target.symlink_to("/dev/zero")  # a link inside the folder to a device: stat follows it
        else:
            target.mkdir()
        with_record(folder, "extra")
        said = {"fifo": "is a FIFO", "device": "is a character device", "folder": "is a directory"}[kind]
    assert main(["verify", "--full", str(index)]) == 2
    out = capsys.readouterr().out
    assert f"{target} {said}" in out and "missing" not in out
    with pytest.raises((IntegrityError, ValueError), match=re.escape(f"{target} {said}")):
        open_index(index)


def test_an_index_without_records_says_it_cannot_be_verified(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    folder = copy_of(built, tmp_path)
    meta_file = folder / "flat" / "index.json"
    meta = json.loads(meta_file.read_text())
    del meta["files"]
    meta_file.write_text(json.dumps(meta))
    assert main(["verify", "--full", str(folder / "flat")]) == 2
    err = capsys.readouterr().err
    assert (
        f"{meta_file} records no SHA-256 of its files" in err and "rebuild it with sentcl index build" in err
    )
    with caplog.at_level(logging.WARNING):
        open_index(folder / "flat")  # opened, as stated above, but not silently
    assert "nothing in it can be verified" in caplog.text
    (folder / "plain").mkdir()
    assert main(["verify", str(folder / "plain")]) == 2
    assert "holds no files recorded by sentcl" in capsys.readouterr().err
