"""Transfer parity on the real thing: the real ``sentcl eval`` command (the console script, a child process) on
the real SentEval data with the real all-MiniLM-L6-v2, against the figures of docs/results/transfer-protocols.md
(SentEval's protocol, which the hand-written reference reproduces exactly), within 0.05.

The default suite runs TREC in both modes (about 2 minutes on the 2-core machine); the ``slow`` tests run all
seven tasks in fast mode, and TREC and MRPC against the independent reference end to end (its own batcher, sort,
features and classifier: tests/evaluation/senteval_reference.py).
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
def seven_fast(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    """The real command once on all seven tasks in fast mode, for both slow tests (minutes of CPU each)."""
    return run_eval(tmp_path_factory.mktemp("seven"), ["transfer_fast"], list(TRANSFER_TASKS))


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
def test_real_command_equals_the_page_on_all_seven_fast(seven_fast: tuple[dict, str]) -> None:
    figures = page_figures()["transfer_fast"]
    results, stderr = seven_fast
    got = {t: results["transfer_fast"][t]["acc"] for t in TRANSFER_TASKS}
    assert got == pytest.approx(figures, abs=0.05)
    assert results["transfer_fast"]["avg"] == pytest.approx(np.mean(list(figures.values())), abs=0.05)
    assert "eval: 7/7 done: transfer_fast MRPC" in stderr


@pytest.mark.slow
def test_real_command_equals_the_independent_reference(seven_fast: tuple[dict, str]) -> None:
    """TREC and MRPC, fast mode: the command against the reference's own batcher, sort, features, classifier."""
    sys.path.insert(0, str(ROOT))
    from bench.transfer_protocols import reference_run

    results, _ = seven_fast
    for task in ("TREC", "MRPC"):
        ref = reference_run(task, "all-MiniLM-L6-v2", None)
        ours = results["transfer_fast"][task]
        assert (ours["acc"], ours["dev_acc"], ours["l2reg"]) == (ref["acc"], ref["dev_acc"], ref["l2reg"]), (
            task
        )
