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
from harness import Case, parametrize, run_case
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


@pytest.mark.parametrize(
    "max_length", [3, TINY_POSITIONS - 1, TINY_POSITIONS, TINY_POSITIONS + 1, 10**12, 2**63]
)
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


CASES: list[Case] = []


@parametrize(CASES)
def test_one_line(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_case(case, tmp_path, capsys)
