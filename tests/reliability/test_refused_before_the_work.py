"""Outputs that cannot be written and inputs that cannot serve are refused at the start, in one line, not after
minutes of work.

- Every writing command of the output policy's table (``test_output_policy.COMMANDS`` and ``FILE_COMMANDS``,
  which a new command must join) is pointed at an output under a read-only folder, in a real process that is
  root without the capabilities that bypass permissions: each says ``cannot write OUTPUT ...: Permission
  denied (in FOLDER)`` from the claim of its output (``sentcl.files.output``), which comes before its work.
- A static model as the teacher of ``distill-static`` (which runs each token through the teacher's layers).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from harness import Case, run_case
from helpers.data import tiny_recipe, write_corpus, write_small_sts
from test_output_policy import COMMANDS, FILE_COMMANDS, FILE_NAME, World, world  # noqa: F401 - a fixture

from sentcl.cli import main

SRC = Path(__file__).resolve().parents[2] / "src"
NO_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
CHILD = """
import contextlib, io, json, sys, time
from sentcl.cli import main
results = []
for argv in json.loads(sys.argv[1]):
    err, start = io.StringIO(), time.perf_counter()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code
    results.append([code, err.getvalue(), time.perf_counter() - start])
print(json.dumps(results))
"""


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if ": error: " in line]


@pytest.mark.slow  # one child process that runs every writing command
def test_every_writing_command_refuses_a_read_only_output_before_its_work(
    world: World,  # noqa: F811 - the output policy's fixture, imported
    tmp_path: Path,
) -> None:
    assert shutil.which("setpriv"), "setpriv (util-linux) is needed to drop root's permission bypass"
    ro = tmp_path / "ro"
    ro.mkdir()
    commands = {**COMMANDS, **{f"file:{k}": v for k, v in FILE_COMMANDS.items()}}
    outs = {name: ro / FILE_NAME.get(name.removeprefix("file:"), "out") for name in commands}
    argvs = [make(outs[name], world, False) for name, make in commands.items()]
    ro.chmod(0o555)
    try:
        done = subprocess.run(
            [*NO_DAC, sys.executable, "-c", CHILD, json.dumps(argvs)],
            cwd=tmp_path,
            env=os.environ | {"PYTHONPATH": os.pathsep.join([str(SRC), *sys.path]), "OMP_NUM_THREADS": "1"},
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        ro.chmod(0o755)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    late = {}
    for name, (code, err, seconds) in zip(commands, results, strict=True):
        lines = error_lines(err)
        ok = len(lines) == 1 and "Traceback" not in err and code in (1, 2)
        ok = ok and "cannot write" in lines[0] and "Permission denied" in lines[0] and str(ro) in lines[0]
        if not ok:
            late[name] = (code, round(seconds, 1), err.strip().splitlines()[-3:])
    assert late == {}, late
    assert os.listdir(ro) == []


@pytest.fixture(scope="module")
def static_model(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("static") / "st"
    argv = ["distill-static", str(tiny_bert), str(out), "--no-fit", "--weighting", "zipf", "--dim", "8"]
    assert main(argv) == 0
    return out


def _static_teacher(static: Path) -> Case:
    return Case(
        "DS_teacher_static",
        lambda d: [
            "distill-static",
            str(static),
            str(d / "st2"),
            "--no-fit",
            "--weighting",
            "zipf",
            "--dim",
            "4",
        ],
        r"TEACHER .*st is a static model .*distilled from a transformer teacher",
        check=lambda d, _: not (d / "st2").exists() or pytest.fail("an output was written"),
    )


def test_a_static_teacher_is_refused_in_one_line(
    static_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_case(_static_teacher(static_model), tmp_path, capsys)


@pytest.fixture(scope="module")
def exported(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("onnx") / "x"
    assert main(["export", "--format", "onnx", str(tiny_bert), str(out)]) == 0
    return out


#: the tiny BERT's position table (max_position_embeddings in tests/helpers/tiny_bert.py): what BERT takes
TINY_POSITIONS = 64


@pytest.mark.parametrize("max_length", [TINY_POSITIONS, TINY_POSITIONS + 1, 10**12, 2**63])
def test_an_onnx_max_length_beyond_the_graph_is_refused_at_open_naming_the_limit(
    max_length: int, exported: Path, tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "x"
    shutil.copytree(exported, folder)
    meta = json.loads((folder / "sentcl_onnx.json").read_text(encoding="utf-8"))
    (folder / "sentcl_onnx.json").write_text(json.dumps(meta | {"max_length": max_length}), encoding="utf-8")
    corpus = tmp_path / "long.txt"
    corpus.write_text(" ".join(["word"] * 300) + "\nshort\n", encoding="utf-8")  # over every limit tried
    fits = max_length <= TINY_POSITIONS
    case = Case(
        "XO_maxlen",
        lambda d: ["encode", "--model", str(folder), "--input", str(corpus), "--output", str(d / "o.npy")],
        None
        if fits
        else rf"sentcl_onnx.json: max_length {max_length} is over the model's position limit "
        rf"{TINY_POSITIONS} .*set max_length to at most {TINY_POSITIONS}",
    )
    run_case(case, tmp_path, capsys)
    if fits:  # the reference: the same model through PyTorch, at the same truncation
        argv = [
            "encode",
            "--model",
            str(tiny_bert),
            "--input",
            str(corpus),
            "--output",
            str(tmp_path / "t.npy"),
        ]
        assert main([*argv, "--max-length", str(max_length)]) == 0
        np.testing.assert_allclose(np.load(tmp_path / "o.npy"), np.load(tmp_path / "t.npy"), atol=1e-4)


def _tiny_recipe(d: Path, tiny: Path, data: Path, **training: object) -> Path:
    corpus = write_corpus(d / "c.txt", 40)
    (d / "r.yaml").write_text(
        yaml.safe_dump(tiny_recipe(tiny, data, corpus, d / "run", **training)), encoding="utf-8"
    )
    return d / "r.yaml"


def one_line_cases(tiny: Path, static: Path, data: Path) -> list[Case]:
    """Inputs that once gave a misleading line: each must now name the slot and what to do."""
    encode = ["encode", "--model", str(static), "--input"]
    return [
        Case(
            "DS_skip_all",
            lambda d: ["distill-static", str(tiny), str(d / "st"), "--no-fit", "--set", "skip_pattern=.*"],
            r"skip_pattern '\.\*' matches every one of the vocabulary's \d+ tokens: nothing is left to distil",
        ),
        Case(
            "STF_backend_onnx",
            lambda d: [
                *encode,
                str(write_corpus(d / "c.txt", 3)),
                "--output",
                str(d / "o.npy"),
                "--backend",
                "onnx",
            ],
            r"--backend onnx does not apply to .*st, a static model .*leave --backend out",
        ),
        Case(
            "STF_export_static",
            lambda d: ["export", "--format", "onnx", str(static), str(d / "x")],
            r"st is a static model .*; an ONNX export needs a PyTorch model$",
        ),
        Case(
            "STF_maxlen_2",
            lambda d: [
                *encode,
                str(write_corpus(d / "c.txt", 3)),
                "--output",
                str(d / "o.npy"),
                "--max-length",
                "2",
            ],
            r"--max-length: 2 is below 3, the least truncation sentcl takes for any model: .*static model",
        ),
        Case(
            "CL_max_examples_1",
            lambda d: ["train", "--config", str(_tiny_recipe(d, tiny, data)), "--set", "data.max_examples=1"],
            r"data\.max_examples=1 leaves fewer examples than one batch \(training\.batch_size=8\); use 8 or more",
        ),
    ]


@pytest.fixture(scope="module")
def cases(tiny_bert: Path, static_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Case]:
    data = write_small_sts(tmp_path_factory.mktemp("data"))
    return {c.id: c for c in one_line_cases(tiny_bert, static_model, data)}


@pytest.mark.parametrize("case_id", [c.id for c in one_line_cases(Path("t"), Path("s"), Path("d"))])
def test_one_line_naming_the_slot(
    case_id: str, cases: dict[str, Case], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_case(cases[case_id], tmp_path, capsys)


def test_a_tokenizer_panic_is_one_line_without_rusts_own_report(
    static_model: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A pattern the open-time check passes (no nested repetition) that onig's retry limit still stops, in a
    model's tokenizer.json (a static model's: the Rust tokenizer itself): the Rust panic's report (written on
    descriptor 2, below Python) must not reach the terminal."""
    folder = tmp_path / "m"
    shutil.copytree(static_model, folder)
    spec = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    split = {"type": "Split", "pattern": {"Regex": "(.*a){12}b"}, "behavior": "Isolated", "invert": False}
    spec["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [split, spec["pre_tokenizer"]]}
    (folder / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    (tmp_path / "in.txt").write_text("a" * 40 + "\n", encoding="utf-8")
    argv = [
        "encode",
        "--model",
        str(folder),
        "--input",
        str(tmp_path / "in.txt"),
        "--output",
        str(tmp_path / "o.npy"),
    ]
    assert main(argv) == 2
    out, err = capfd.readouterr()
    assert "panicked at" not in err and "RUST_BACKTRACE" not in err and "Traceback" not in err, err
    (line,) = error_lines(err)
    assert "a Rust panic: Onig: Regex search error: retry-limit-in-match over" in line, line


def test_panic_reports_are_cut_and_everything_else_kept() -> None:
    from sentcl.modeling.tokenizer_checks import without_panic_reports

    report = (
        b"\nthread '<unnamed>' (22868) panicked at /x/onig-6.5.3/src/lib.rs:647:23:\nOnig: retry-limit\n"
        b"stack backtrace:\n   0: rust_begin_unwind\nnote: Some details are omitted, run with `RUST_BACKTRACE=full`.\n"
    )
    plain = b"thread 'main' panicked at src/main.rs:2:5:\nboom\nnote: run with `RUST_BACKTRACE=1` to see\n"
    assert without_panic_reports(b"log line\n" + report + b"after\n") == b"log line\nafter\n"
    assert without_panic_reports(plain + plain) == b""
    assert (
        without_panic_reports(b"a thread 'x' panicked at y\n") == b"a thread 'x' panicked at y\n"
    )  # mid-line


def test_a_folder_named_like_a_built_in_recipe_gives_way_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from sentcl.config.builtin import builtin_path, resolve_recipe, static_recipe_path
    from sentcl.config.static_recipe import load_static_recipe

    monkeypatch.chdir(tmp_path)
    for name in ("demo", "distill_static"):
        (tmp_path / name).mkdir()
    with caplog.at_level("WARNING"):
        assert resolve_recipe("demo") == builtin_path("demo")
        assert load_static_recipe("distill_static") == load_static_recipe(
            str(static_recipe_path("distill_static"))
        )
    assert "the folder demo is not a recipe, so the built-in recipe demo.yaml is used" in caplog.text
    assert (
        "the folder distill_static is not a recipe" in caplog.text
        and "distill_static/FILE.yaml" in caplog.text
    )
    caplog.clear()
    (tmp_path / "tsdae").write_text("training: {batch_size: 8}\n", encoding="utf-8")  # a file: it is used
    with caplog.at_level("WARNING"):
        assert resolve_recipe("tsdae") == Path("tsdae")
    assert (
        f"the file tsdae is used, not the built-in recipe of that name; to use the built-in one, give its path {builtin_path('tsdae')}"
        in caplog.text
    )
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert resolve_recipe(str(builtin_path("demo"))) == builtin_path("demo")  # the built-in's own path
    assert caplog.text == ""


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            lambda c: {("Training" if k == "training" else k): v for k, v in c.items()},
            r"unknown section 'Training'",
        ),
        (lambda c: c | {"eval": [1]}, r"section 'eval' must be an object, got list"),
        (lambda c: c | {"extra": {}}, r"unknown section 'extra'"),
    ],
)
def test_a_changed_saved_config_is_named_on_resume_never_diffed(change, problem: str, tmp_path: Path) -> None:
    from sentcl.config import ConfigError, TrainConfig, load_config
    from sentcl.config.typed import to_dict
    from sentcl.training.run_folder import resume_changes

    cfg = load_config(TrainConfig, None, [f"training.output_dir={tmp_path}"])
    (tmp_path / "config.json").write_text(json.dumps(change(to_dict(cfg))), encoding="utf-8")
    with pytest.raises(
        ConfigError, match=rf"^--resume: {tmp_path}/config.json: {problem}.*; .*restore it, or start a new"
    ):
        resume_changes(tmp_path, cfg, tmp_path / "train.txt")
    (tmp_path / "config.json").write_text(json.dumps(to_dict(cfg)), encoding="utf-8")
    assert resume_changes(tmp_path, cfg, tmp_path / "train.txt") == []  # the file as written: no change
