"""The output policy (``sentcl.files.output``), table-driven: every writing command against an existing user
folder, a model folder, its own input, a run folder, and a stray ``.tmp-OUT-*`` sibling.

Each refused row must exit 2 with one error line naming the output, and leave every byte of the target and
of the command's inputs as it was (a digest of each tree, taken before and after, hidden files included).
The stray-temporary rows must succeed and leave the user's ``.tmp-OUT-notes/important.txt`` in place
(X_tmp_glob). Single-file writers (an encode's ``.npy``, ``mine``, ``build-nli``, ``build-corpus``, ``eval
--output``/``--plot``, ``download``) run against an existing file of the user's as well, without
``--overwrite``; the rows that point a command at its own input or at a folder pass ``--overwrite``, which
never makes them allowed. ``test_every_command_of_the_parser_has_a_row`` enumerates the CLI's commands from
its parser: a new command must get a row here, or a place among the commands that write nothing. The index build has
its rows here too: into an existing folder, into a model folder, onto its own input, onto the working folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
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
    pairs: Path
    snli: Path


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
    pairs = root / "pairs.csv"
    pairs.write_text("sentence1,sentence2,score\na dog,a puppy,4.5\na cat,rain,0.5\nthe sea,a lake,3.0\n")
    snli = root / "snli"
    snli.mkdir()
    for split in ("dev", "test"):
        (snli / f"s1.{split}").write_text("a man sleeps\na man sleeps\n", encoding="utf-8")
        (snli / f"s2.{split}").write_text("a person rests\na man runs\n", encoding="utf-8")
        (snli / f"labels.{split}").write_text("entailment\ncontradiction\n", encoding="utf-8")
    return World(root, tiny_bert, corpus, shards, data, root / "grid.yaml", pairs, snli)


def make_target(kind: str, folder: Path, w: World, name: str = "out") -> Path:
    """The existing thing a command is pointed at: a file or folder of the user's notes, a model, a run."""
    out = folder / name
    out.parent.mkdir(parents=True, exist_ok=True)
    if kind == "user_file":
        out.write_text("precious\n", encoding="utf-8")
    elif kind == "user_folder":
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
    "shrink": lambda out, w, own: ["shrink", model_arg(out, w, own), str(out), "--budget", "10x"],
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


# ---- single files: (out, world, own) -> argv; ``own``: ``out`` is a copy of the command's own input file


def _eval_out(flag: str) -> Command:
    def argv(out: Path, w: World, own: bool) -> list[str]:
        sweep = ["--truncate-dims", "8,16"] if flag == "--plot" else []
        return [
            "eval",
            "--model",
            str(w.model),
            "--pairs",
            str(out if own else w.pairs),
            *sweep,
            flag,
            str(out),
        ]

    return argv


FILE_COMMANDS: dict[str, Command] = {
    "encode_npy": lambda out, w, own: [
        "encode", "--model", str(w.model), "--input", str(out if own else w.corpus), "--output", str(out),
    ],
    "mine": lambda out, w, own: [
        "mine", "--model", str(w.model), "--pairs", str(out if own else w.pairs), "--output", str(out),
        "--anchor-column", "sentence1", "--positive-column", "sentence2",
    ],
    "build_nli": lambda out, w, own: [
        "build-nli", "--senteval-snli", str(out.parent if own else w.snli), "--output", str(out),
    ],
    "build_corpus": lambda out, w, own: [
        "build-corpus", "english", "--data-dir", str(out.parents[3] if own else w.data), "--out", str(out),
    ],
    "eval_output": _eval_out("--output"),
    "eval_plot": _eval_out("--plot"),
    "download": lambda out, w, own: ["download", "senteval", "--data-dir", str(out.parent)],
    "distill_static": lambda out, w, own: [
        "distill-static", str(out if own else w.model), str(out), "--no-fit", "--weighting", "zipf",
    ],
}  # fmt: skip
#: where each single-file command's output goes (its name decides what the command accepts)
FILE_NAME = {"encode_npy": "out.npy", "download": "senteval", "eval_plot": "out.png", "mine": "out.csv"}
#: each command's own input, as a copy at its output path (download reads nothing local)
OWN_INPUT = {
    "encode_npy": lambda w: w.corpus,
    "mine": lambda w: w.pairs,
    "build_nli": lambda w: w.snli / "s1.dev",
    "build_corpus": lambda w: w.data / "senteval" / "STS" / "STSBenchmark" / "sts-dev.csv",
    "eval_output": lambda w: w.pairs,
    "eval_plot": lambda w: w.pairs,
    "distill_static": lambda w: w.model,
}
FILE_TARGETS = ("user_file", *TARGETS)
FILE_ROWS = [
    (cmd, target)
    for cmd in FILE_COMMANDS
    for target in FILE_TARGETS
    if not (target == "own_input" and cmd not in OWN_INPUT)
    and not (cmd == "distill_static" and target == "user_file")
]


def _own_copy(command: str, tmp_path: Path, world: World) -> Path:
    """A copy of the command's own input (its whole folder where the command reads a folder) at ``out``."""
    source = OWN_INPUT[command](world)
    if command == "build_corpus":  # the data folder, and the output one of the files it reads
        shutil.copytree(world.data, tmp_path / "data")
        return tmp_path / "data" / source.relative_to(world.data)
    if command == "build_nli":
        shutil.copytree(world.snli, tmp_path / "snli")
        return tmp_path / "snli" / source.name
    out = tmp_path / FILE_NAME.get(command, "out")
    (shutil.copytree if source.is_dir() else shutil.copyfile)(source, out)
    return out


@pytest.mark.parametrize(("command", "target"), FILE_ROWS, ids=[f"{c}-{t}" for c, t in FILE_ROWS])
def test_a_single_file_output_never_replaces_what_it_did_not_make(
    command: str, target: str, world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    own = target == "own_input"
    if own:
        out = _own_copy(command, tmp_path, world)
    else:
        out = make_target(target, tmp_path, world, FILE_NAME.get(command, "out"))
    # an existing file of the user's: refused as it is; the rest even when --overwrite asks
    overwrite = [] if target == "user_file" else ["--overwrite"]
    before = {p: tree_digest(p) for p in (out, world.model, world.corpus, world.pairs, world.snli)}
    code = main([*FILE_COMMANDS[command](out, world, own), *overwrite])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    lines = [line for line in captured.err.splitlines() if ": error: " in line]
    assert code == 2 and len(lines) == 1, f"exit {code}:\n{captured.err}"
    assert str(out) in lines[0], lines[0]
    if target == "user_file" and command != "download":  # download's place is a folder: refused as one
        assert "pass --overwrite to replace it" in lines[0]
    assert {p: tree_digest(p) for p in before} == before, "a byte of the user's files changed"
    assert not list(tmp_path.glob(".tmp-*"))


def test_overwrite_replaces_an_earlier_npy_whole(world: World, tmp_path: Path) -> None:
    out = make_target("user_file", tmp_path, world, "out.npy")
    assert main(FILE_COMMANDS["encode_npy"](out, world, False)) == 2
    assert main([*FILE_COMMANDS["encode_npy"](out, world, False), "--overwrite"]) == 0
    assert np.load(out).shape[0] == len(world.corpus.read_text(encoding="utf-8").splitlines())


# ---- every command the parser knows has a row above, or writes nothing

#: commands that write no file or folder of their own (a log goes to stderr, results to stdout)
WRITES_NOTHING = {
    "serve": "answers HTTP requests; reads its model and index",
    "recipes show": "prints one recipe",
    "index info": "prints what an index folder holds",
    "verify": "prints what it checked (only the fingerprint cache is written)",
}
#: parser command -> the rows above that cover it
COVERED = {
    "train": ["train"],
    "eval": ["eval_output", "eval_plot"],
    "encode": ["encode_npy", "encode_shards"],
    "search": ["search_index"],
    "index build": ["index_build"],
    "mine": ["mine"],
    "build-nli": ["build_nli"],
    "build-corpus": ["build_corpus"],
    "download": ["download"],
    "report": ["report"],
    "experiment": ["experiment"],
    "export": ["export"],
    "distill-static": ["distill_static"],
    "postprocess": ["postprocess"],
    "shrink": ["shrink"],
}


def parser_commands() -> list[str]:
    """Every command and sub-command of ``sentcl`` (``index build``, ``recipes show``, ...), from its parser."""
    import argparse

    from sentcl.cli import build_parser

    def walk(parser: argparse.ArgumentParser, prefix: str) -> list[str]:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            return [prefix]
        return [
            name
            for sub in subs
            for cmd, p in sub.choices.items()
            for name in walk(p, f"{prefix} {cmd}".strip())
        ]

    return walk(build_parser(), "")


def test_every_command_of_the_parser_has_a_row() -> None:
    commands = parser_commands()
    assert "index build" in commands and "train" in commands  # the walk found the nested ones
    missing = [c for c in commands if c not in COVERED and c not in WRITES_NOTHING]
    assert not missing, f"commands with no row in the output policy's table: {missing}"
    stale = [c for c in [*COVERED, *WRITES_NOTHING] if c not in commands]
    assert not stale, f"rows for commands the parser no longer has: {stale}"
    rows = set(COMMANDS) | set(FILE_COMMANDS)
    assert {r for names in COVERED.values() for r in names} == rows, "a row that no command names"


def test_a_users_markdown_folder_is_not_taken_for_an_experiments_pages(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Any ``*.md`` used to count as an old experiment's folder: a user's notes would have been written into."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for name in ("todo.md", "ideas.md"):
        (notes / name).write_text(f"# {name}\n", encoding="utf-8")
    (notes / "drafts" / "runs").mkdir(parents=True)  # even a runs/ folder of the user's
    before = tree_digest(notes)
    assert main(COMMANDS["experiment"](notes, world, False)) == 2
    assert "holds files sentcl did not write (drafts, ideas.md, todo.md)" in capsys.readouterr().err
    assert tree_digest(notes) == before and not (world.root / "runs").exists()


def test_an_experiment_folder_written_before_markers_is_known_by_its_pages_exact_files(
    tmp_path: Path,
) -> None:
    """An old pages folder (no marker) is known by a page's .md, its .png and its runs/, all three."""
    from sentcl.files.output import OutputRefused, claim_folder

    old = tmp_path / "old"
    old.mkdir()
    (old / "t-cpu.md").write_text("# page\n", encoding="utf-8")
    (old / "t-cpu.png").write_bytes(b"\x89PNG")
    with pytest.raises(OutputRefused, match="files sentcl did not write"):  # page and plot alone: not enough
        claim_folder(old, "experiment", "--output")
    (old / "t-cpu" / "runs").mkdir(parents=True)
    assert claim_folder(old, "experiment", "--output")  # another grid's pages: sentcl's own folder
    mine = tmp_path / "mine"
    (mine / "g-cpu").mkdir(parents=True)  # this grid's page folder (side tables put there for its page)
    assert claim_folder(mine, "experiment", "--output", known=["g-cpu", "g-cpu.md"])


def test_experiment_output_that_is_a_file_is_refused_before_any_point_trains_g_output_file_fresh(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """G_output_file_fresh: every point trained, then 'afile.txt/good-cpu/runs/0.05.tmp: Not a directory'."""
    afile = tmp_path / "afile.txt"
    afile.write_text("x\n", encoding="utf-8")
    runs = tmp_path / "runs"
    argv = [
        "experiment",
        str(world.grid),
        "--variant",
        "cpu",
        "--output",
        str(afile),
        "--runs-dir",
        str(runs),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--output {afile} is a file, not a folder" in err and "Traceback" not in err
    assert not runs.exists() and afile.read_text(encoding="utf-8") == "x\n"
