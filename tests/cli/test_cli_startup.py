"""``sentcl --version`` and ``sentcl COMMAND --help`` answer at once: building the parser imports no model,
engine or evaluation code (each command imports what runs it inside its handler), and costs little CPU.

Checked in a child interpreter (the test process has torch loaded already): the modules it ends with, and the
user + system CPU seconds it took, read from the OS (``resource.getrusage`` of the children).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys

import pytest

from sentcl.cli import COMMANDS

# packages that are seconds of CPU to import, or that load native engines
HEAVY = (
    "torch",
    "transformers",
    "numpy",
    "scipy",
    "sklearn",
    "pandas",
    "faiss",
    "onnxruntime",
    "matplotlib",
    "fastapi",
    "uvicorn",
    "mteb",
    "tokenizers",
    "safetensors",
    "huggingface_hub",
)
CPU_LIMIT_S = 0.5  # the target for --version and COMMAND --help (median of 3 children)

# runs sentcl's main with each argv in turn (a JSON list), printing after each the top-level packages imported
PROBE = """
import contextlib, io, json, sys
from sentcl.cli import main
seen = {}
for argv in json.loads(sys.argv[1]):
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
        main(argv)
    seen[" ".join(argv)] = sorted({name.split(".")[0] for name in sys.modules})
print(json.dumps(seen))
"""
ARGVS = [["--version"], ["--help"], *([cmd, "--help"] for cmd, _ in COMMANDS)]


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1"}


def _cpu_seconds(argv: list[str]) -> float:
    """User + system CPU seconds of ``python -m sentcl.cli ARGV``: the median of 3 runs."""
    spent = []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [sys.executable, "-m", "sentcl.cli", *argv], capture_output=True, env=_env(), check=True
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(spent)


def test_version_and_help_import_no_heavy_package() -> None:
    """One child runs --version, --help and every COMMAND --help in turn: none imports a heavy package."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(ARGVS)],
        capture_output=True,
        text=True,
        env=_env(),
        check=True,
    ).stdout
    seen = json.loads(out.strip().splitlines()[-1])
    assert list(seen) == [" ".join(argv) for argv in ARGVS]
    for argv, packages in seen.items():
        heavy = sorted(set(packages) & set(HEAVY))
        assert not heavy, f"sentcl {argv} imported {heavy}"


def test_the_parser_still_has_every_command() -> None:
    """Every command's sub-parser is built (the option catalogue and --help read them all)."""
    from sentcl.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert list(sub.choices) == [cmd for cmd, _ in COMMANDS]
    assert all(p._actions for p in sub.choices.values())


@pytest.mark.parametrize(
    "argv", [["--version"], ["train", "--help"], ["eval", "--help"], ["serve", "--help"]]
)
def test_version_and_help_take_little_cpu(argv: list[str]) -> None:
    spent = _cpu_seconds(argv)
    assert spent <= CPU_LIMIT_S, f"sentcl {' '.join(argv)}: {spent:.2f} CPU seconds (limit {CPU_LIMIT_S})"


def test_the_commands_that_evaluate_say_so() -> None:
    """The "mteb" task is registered before a command that evaluates runs (``evaluates=True``), not for the
    others, which then never import the evaluation code."""
    from sentcl.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    evaluating = {name for name, p in sub.choices.items() if p.get_default("evaluates")}
    assert evaluating == {"train", "eval", "report", "experiment"}
