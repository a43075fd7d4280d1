"""Transfer parity on the real thing: the real ``sentcl eval`` command (the console script, a child process) on
the real SentEval data with the real all-MiniLM-L6-v2, against the figures of docs/results/transfer-protocols.md
(SentEval's protocol, which the hand-written reference reproduces exactly), within 0.05; TREC in both modes; and
fast mode against the independent reference end to end (its own batcher, sort, features and classifier:
tests/evaluation/senteval_reference.py).

Which fast-mode tasks the command runs: ``make test`` runs ``PARITY_TASKS``, one task of each of SentEval's
readers and validation schemes: CR (the smallest of the four single-file binary tasks, which share one reader
and the inner k-fold; MR, SUBJ and MPQA hold 10,000 to 10,662 sentences each), TREC and MRPC (the k-fold then
test, MRPC with its pair features). SST-2 is left to the full run: its 70,042 sentences are 57% of the seven
tasks' encode, and its split classifier is checked against the reference on generated data
(test_senteval_protocol.py). The reference, whose own encode is most of its time, runs TREC (MRPC's figures
are still checked against the page, and its pair features against the reference on generated data in
test_senteval_protocol.py). ``make test-transfer`` (``SENTCL_TRANSFER_PARITY=all``) runs all seven tasks, and
the reference on TREC and MRPC.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sentcl.evaluation.transfer import TRANSFER_TASKS

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "results" / "transfer-protocols.md"
SENTCL = Path(sys.executable).with_name("sentcl")
MODES = {"transfer_fast": "**Fast mode**", "transfer": "**Test mode**"}
PARITY_TASKS = ("CR", "TREC", "MRPC")  # the module doc says why these
ALL_ENV = "SENTCL_TRANSFER_PARITY"  # "all": every transfer task (make test-transfer)


def _all() -> bool:
    """Whether ``$SENTCL_TRANSFER_PARITY`` asks for the full run (any value but "all" or unset is refused, so a
    typo does not quietly run the short set)."""
    value = os.environ.get(ALL_ENV, "")
    if value not in ("", "all"):
        raise ValueError(f"${ALL_ENV} must be 'all' or unset, got {value!r}")
    return value == "all"


def parity_tasks() -> tuple[str, ...]:
    """The fast-mode tasks the command runs: ``PARITY_TASKS``, or all seven for the full run."""
    return TRANSFER_TASKS if _all() else PARITY_TASKS


def reference_tasks() -> tuple[str, ...]:
    """The tasks the independent reference runs end to end: TREC, and MRPC too in the full run."""
    return ("TREC", "MRPC") if _all() else ("TREC",)


def page_figures() -> dict[str, dict[str, float]]:
    """{task name: {transfer task: accuracy}} of the page's "senteval (default)" rows, fast and test mode."""
    text = PAGE.read_text(encoding="utf-8")
    figures = {}
    for task, heading in MODES.items():
        section = text[text.index(heading) :]
        header = next(line for line in section.splitlines() if line.startswith("| protocol |"))
        row = next(line for line in section.splitlines() if line.startswith("| senteval (default) |"))
        names = [c.strip() for c in header.strip("|").split("|")]
        cells = [c.strip() for c in row.strip("|").split("|")]
        by_column = dict(zip(names, cells, strict=True))
        figures[task] = {t: float(by_column["SST-2" if t == "SST2" else t]) for t in TRANSFER_TASKS}
    return figures


@pytest.fixture(scope="module")
def fast_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    """The real command once in fast mode on ``parity_tasks()``, for both slow tests (minutes of CPU)."""
    return run_eval(tmp_path_factory.mktemp("fast"), ["transfer_fast"], list(parity_tasks()))


def run_eval(tmp_path: Path, tasks: list[str], transfer_tasks: list[str]) -> tuple[dict, str]:
    """The real command, as a user types it; (its --output JSON, its stderr)."""
    out = tmp_path / "results.json"
    cmd = [str(SENTCL), "eval", "--model", "all-MiniLM-L6-v2", "--pooler", "avg", "--tasks", *tasks]
    cmd += ["--transfer-tasks", *transfer_tasks, "--output", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(out.read_text(encoding="utf-8")), done.stderr


def test_page_figures_are_read() -> None:
    figures = page_figures()
    assert figures["transfer_fast"]["MR"] == 75.06 and figures["transfer_fast"]["MRPC"] == 71.71
    assert figures["transfer"]["TREC"] == 90.00 and figures["transfer"]["SST2"] == 81.27


@pytest.mark.slow
def test_real_command_equals_the_page_on_trec_both_modes(tmp_path: Path) -> None:
    figures = page_figures()
    results, stderr = run_eval(tmp_path, ["transfer_fast", "transfer"], ["TREC"])
    for task in MODES:
        assert results[task]["TREC"]["acc"] == pytest.approx(figures[task]["TREC"], abs=0.05), task
        assert results[task]["TREC"]["protocol"] == "senteval"
    # progress: a line per part when stderr is not a terminal, parts done out of the total
    assert "eval: 1/2 done: transfer_fast TREC" in stderr and "eval: 2/2 done: transfer TREC" in stderr


@pytest.mark.slow
def test_real_command_equals_the_page_fast(fast_run: tuple[dict, str]) -> None:
    tasks = parity_tasks()
    figures = {t: page_figures()["transfer_fast"][t] for t in tasks}
    results, stderr = fast_run
    got = {t: results["transfer_fast"][t]["acc"] for t in TRANSFER_TASKS if t in results["transfer_fast"]}
    assert got == pytest.approx(figures, abs=0.05)
    assert results["transfer_fast"]["avg"] == pytest.approx(np.mean(list(figures.values())), abs=0.05)
    assert f"eval: {len(tasks)}/{len(tasks)} done: transfer_fast MRPC" in stderr


def test_the_short_set_has_one_task_of_each_reader_and_scheme(monkeypatch: pytest.MonkeyPatch) -> None:
    from sentcl.data.senteval_files import BINARY_FILES

    monkeypatch.delenv(ALL_ENV, raising=False)
    assert parity_tasks() == PARITY_TASKS and {"TREC", "MRPC"} <= set(PARITY_TASKS)
    assert len(set(PARITY_TASKS) & set(BINARY_FILES)) == 1  # one of the tasks that share the binary reader
    assert reference_tasks() == ("TREC",)
    monkeypatch.setenv(ALL_ENV, "all")
    assert parity_tasks() == TRANSFER_TASKS and reference_tasks() == ("TREC", "MRPC")
    monkeypatch.setenv(ALL_ENV, "yes")
    with pytest.raises(ValueError, match="SENTCL_TRANSFER_PARITY"):
        parity_tasks()


@pytest.mark.slow
def test_real_command_equals_the_independent_reference(fast_run: tuple[dict, str]) -> None:
    """Fast mode (``reference_tasks()``): the command against the reference's own batcher, sort, features,
    classifier."""
    sys.path.insert(0, str(ROOT))
    from bench.transfer_protocols import reference_run

    results, _ = fast_run
    for task in reference_tasks():
        ref = reference_run(task, "all-MiniLM-L6-v2", None)
        ours = results["transfer_fast"][task]
        assert (ours["acc"], ours["dev_acc"], ours["l2reg"]) == (ref["acc"], ref["dev_acc"], ref["l2reg"]), (
            task
        )
