"""The table format of the bad-input tests: one row per bad input, run through the real CLI in-process.

A row (``Case``) writes its bad input under a fresh folder and returns the ``sentcl`` argv to run; the
command must then exit with ``code`` and print one ``sentcl CMD: error: ...`` line matching ``error``
(a regular expression), and never a traceback. ``error=None`` means the command must succeed
(``code`` 0), and ``check`` (optional) then inspects the folder for the promised behaviour (a counted
skip, a file left intact, ...). bench/results/records/reliability.md keeps the table with its verdicts: a new case is a
new row in one of the ``test_*.py`` tables here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from sentcl.cli import main


@dataclass(frozen=True)
class Case:
    id: str  # short name, as in bench/results/records/reliability.md
    setup: Callable[[Path], list[str]]  # writes the bad input below the folder; returns sentcl's argv
    error: str | None  # regex the one error line must match; None: the command must succeed
    code: int = 2
    check: Callable[[Path, str], None] | None = None  # (folder, captured stdout+stderr) -> asserts


def run_case(case: Case, folder: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """Run one row and assert its promise; returns what the command printed (stdout + stderr)."""
    argv = case.setup(folder)
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's refusal of a value by the option's type= reader: one line, exit 2
        code = stop.code
    out, err = capsys.readouterr()
    printed = out + err
    assert "Traceback" not in printed, f"{case.id}: a traceback reached the user:\n{printed}"
    assert code == (0 if case.error is None else case.code), f"{case.id}: exit {code}\n{printed}"
    if case.error is not None:
        lines = [line for line in err.splitlines() if ": error: " in line]
        assert len(lines) == 1, f"{case.id}: expected one error line, got:\n{err}"
        assert re.search(case.error, lines[0]), f"{case.id}: {lines[0]!r} does not match {case.error!r}"
    if case.check is not None:
        case.check(folder, printed)
    return printed


def parametrize(cases: list[Case]):  # noqa: ANN201 - a pytest mark
    """``@parametrize(CASES)`` over a table, each row named by its id."""
    return pytest.mark.parametrize("case", cases, ids=[c.id for c in cases])
