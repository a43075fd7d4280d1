"""The output policy (``sentcl.files.output``), table-driven: every writing command against an existing user
folder, a model folder, its own input, a run folder, and a stray ``.tmp-OUT-*`` sibling.

Each refused row must exit 2 with one error line naming the output, and leave every byte of the target and
of the command's inputs as it was (a digest of each tree, taken before and after, hidden files included).
The stray-temporary rows must succeed and leave the user's ``.tmp-OUT-notes/important.txt`` in place
(X_tmp_glob). Rows OW_index_build, OW_index_into_model, OW_index_onto_input and OW_index_onto_cwd of the
third reliability sweep are the index build's rows here.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.data import tiny_recipe, write_corpus, write_small_sts

from sentcl.cli import main
from sentcl.files.output import MARKER, read_marker

TARGETS = ("user_folder", "model_folder", "own_input", "run_folder")


def tree_digest(path: Path) -> dict[str, str]:
    """Every file below ``path`` (hidden ones too) -> its SHA-256; a file -> its own; missing -> {}."""
    if path.is_file():
        return {"": hashlib.sha256(path.read_bytes()).hexdigest()}
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


@dataclass
class World:
    """The inputs every command reads: the tiny model, a corpus, shards of it, a small data folder, a grid."""

    root: Path
    model: Path
    corpus: Path
    shards: Path
    data: Path
    grid: Path


@pytest.fixture(scope="module")
def world(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("policy")
    corpus = write_corpus(root / "corpus.txt", 30)
    shards = root / "shards"
    argv = ["encode", "--model", str(tiny_bert), "--input", str(corpus), "--output", str(shards)]
    assert main([*argv, "--shard-size", "10"]) == 0
    data = write_small_sts(root / "data")
    recipe = tiny_recipe(tiny_bert, data, corpus, root / "unused")
    (root / "base.yaml").write_text(json.dumps(recipe), encoding="utf-8")
    grid = {
        "title": "t",
        "base": str(root / "base.yaml"),
        "metric": "stsb_dev",
        "vary": {"training.seed": [1]},
        "variants": {"cpu": {}},
    }
    (root / "grid.yaml").write_text(json.dumps(grid), encoding="utf-8")
    return World(root, tiny_bert, corpus, shards, data, root / "grid.yaml")


def make_target(kind: str, folder: Path, w: World) -> Path:
    """The existing thing a command is pointed at: a folder of the user's notes, a model, a run."""
    out = folder / "out"
    if kind == "user_folder":
        out.mkdir()
        (out / "notes.txt").write_text("precious\n", encoding="utf-8")
    elif kind == "model_folder":
        shutil.copytree(w.model, out)
    elif kind == "run_folder":
        out.mkdir()
        (out / "config.json").write_text(json.dumps({"training": {"output_dir": str(out)}}), encoding="utf-8")
        (out / "metrics.jsonl").write_text('{"event": "data"}\n', encoding="utf-8")
        (out / "results.json").write_text('{"results": {}}', encoding="utf-8")
        (out / "checkpoint-2").mkdir()
        (out / "checkpoint-2" / "training_state.pt").write_bytes(b"state")
    return out


# each command: (out, world, own) -> argv; ``own``: point the command's own input at ``out`` as well
Command = Callable[[Path, World, bool], list[str]]


def model_arg(out: Path, w: World, own: bool) -> str:
    return str(out if own else w.model)


COMMANDS: dict[str, Command] = {
    "index_build": lambda out, w, own: [
        "index", "build", "--embeddings", str(out if own else w.shards), "--type", "flat", "--output", str(out),
    ],
    "export": lambda out, w, own: ["export", "--format", "onnx", model_arg(out, w, own), str(out)],
    "postprocess": lambda out, w, own: [
        "postprocess", "whitening", "--model", model_arg(out, w, own), "--fit-file", str(w.corpus),
        "--output", str(out),
    ],
    "encode_shards": lambda out, w, own: [
        "encode", "--model", model_arg(out, w, own), "--input", str(w.corpus), "--output", str(out),
        "--shard-size", "10",
    ],
    "search_index": lambda out, w, own: [
        "search", "--model", model_arg(out, w, own), "--corpus", str(w.corpus), "--query", "a", "--index", str(out),
    ],
    "report": lambda out, w, own: [
        "report", str(out if own else w.model), "--eval-tasks", "align_uniform", "--data-dir", str(w.data),
        "--output", str(out),
    ],
    "train": lambda out, w, own: [
        "train", "--config", str(w.root / "base.yaml"), "--set", f"training.output_dir={out}",
        *(["--set", f"model.name_or_path={out}"] if own else []),
    ],
    "experiment": lambda out, w, own: [
        "experiment", str(out if own else w.grid), "--variant", "cpu", "--output", str(out), "--runs-dir", str(w.root / "runs"),
    ],
}  # fmt: skip
ROWS = [(cmd, target) for cmd in COMMANDS for target in TARGETS]


@pytest.mark.parametrize(("command", "target"), ROWS, ids=[f"{c}-{t}" for c, t in ROWS])
def test_a_writing_command_never_replaces_or_writes_into_what_it_did_not_make(
    command: str, target: str, world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    own = target == "own_input"
    if own and command == "train":  # the run's own input: its model folder (the training file is a file)
        out = make_target("model_folder", tmp_path, world)
    elif own and command in ("index_build", "report"):
        out = tmp_path / "out"
        shutil.copytree(world.shards if command == "index_build" else world.model, out)
    elif own and command == "experiment":  # its own input: the grid file
        out = tmp_path / "grid.yaml"
        shutil.copyfile(world.grid, out)
    else:
        out = make_target("model_folder" if own else target, tmp_path, world)
    before = {p: tree_digest(p) for p in (out, world.model, world.corpus, world.shards)}
    code = main(COMMANDS[command](out, world, own))
    captured = capsys.readouterr()
    err = captured.err
    assert "Traceback" not in err + captured.out
    lines = [line for line in err.splitlines() if ": error: " in line]
    assert code == 2 and len(lines) == 1, f"exit {code}:\n{err}"
    assert str(out) in lines[0], lines[0]
    assert {p: tree_digest(p) for p in before} == before, "a byte of the user's files changed"
    assert not list(tmp_path.glob(".tmp-*")) and not list(tmp_path.glob(".old-*"))


STRAY_OK = ("index_build", "encode_shards", "postprocess")


@pytest.mark.parametrize("command", STRAY_OK)
def test_a_stray_tmp_sibling_of_the_user_is_left_alone(
    command: str, world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mine"
    stray = tmp_path / ".tmp-mine-notes"
    stray.mkdir()
    (stray / "important.txt").write_text("my notes\n", encoding="utf-8")
    (
        tmp_path / ".tmp-mine-0123abcd"
    ).mkdir()  # named as an older sentcl named its temporaries: no owner record
    assert main(COMMANDS[command](out, world, False)) == 0, capsys.readouterr().err
    assert (stray / "important.txt").read_text(encoding="utf-8") == "my notes\n"
    assert (tmp_path / ".tmp-mine-0123abcd").is_dir()
    assert read_marker(out) is not None  # sentcl's folder now says so


def test_export_leaves_a_stray_tmp_sibling_alone_x_tmp_glob(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """X_tmp_glob: export into OUT while the user has a folder .tmp-OUT-notes/ holding a file."""
    pytest.importorskip("onnx")
    stray = tmp_path / ".tmp-mine-notes"
    stray.mkdir()
    (stray / "important.txt").write_text("my notes\n", encoding="utf-8")
    assert main(COMMANDS["export"](tmp_path / "mine", world, False)) == 0, capsys.readouterr().err
    assert (stray / "important.txt").read_text(encoding="utf-8") == "my notes\n"
    assert (tmp_path / "mine" / "model.onnx").is_file() and read_marker(tmp_path / "mine")["kind"] == "export"


def test_an_index_replaces_its_own_earlier_index_only_with_overwrite(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = COMMANDS["index_build"](tmp_path / "idx", world, False)
    assert main(argv) == 0
    first = tree_digest(tmp_path / "idx")
    assert main(argv) == 2
    assert "holds an earlier sentcl index; pass --overwrite" in capsys.readouterr().err
    assert tree_digest(tmp_path / "idx") == first
    (tmp_path / "idx" / MARKER).unlink()  # an index written before markers: still recognised as one
    assert main([*argv, "--overwrite"]) == 0
    assert read_marker(tmp_path / "idx") == {**read_marker(tmp_path / "idx"), "kind": "index"}


def test_index_build_into_the_working_folder_is_refused_ow_index_onto_cwd(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "keep.txt").write_text("x", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["index", "build", "--embeddings", str(world.shards), "--type", "flat", "--output", "."]) == 2
    assert "holds the working folder" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["keep.txt"]
