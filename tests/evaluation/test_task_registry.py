"""The one record per evaluation task (sentcl.evaluation.runner.TASKS): help, formatter, headline, dev flag."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from sentcl.evaluation.runner import TASKS, dev_score, dev_task_names, format_results, headline, tasks_help
from sentcl.evaluation.senteval_readers import load_sts_task


def bow_encode(sentences: list[str]) -> np.ndarray:
    """A deterministic bag-of-letters encoder: enough to give STS a non-trivial correlation."""
    out = np.zeros((len(sentences), 26))
    for i, s in enumerate(sentences):
        for ch in s.lower():
            if "a" <= ch <= "z":
                out[i, ord(ch) - 97] += 1
    return out


def spearman_by_hand(pairs: list[tuple[str, str, float]]) -> float:
    """100 x Spearman of the bag-of-letters cosine against gold, computed here without sentcl."""
    a, b = bow_encode([p[0] for p in pairs]), bow_encode([p[1] for p in pairs])
    norms = np.sqrt((a * a).sum(1) * (b * b).sum(1))  # one rounding path: ties of this encoder stay ties
    cos = np.divide((a * b).sum(1), norms, out=np.zeros(len(pairs)), where=norms > 0)
    return 100 * float(spearmanr(cos, [p[2] for p in pairs]).statistic)


def test_every_task_has_help_and_formatter_and_names_itself() -> None:
    for name, task in TASKS.items():
        assert task.name == name and task.help and callable(task.format)
        assert (task.headline is None) == (task.title == "")  # a headline has a column title
    text = tasks_help()
    assert all(f"{name}: {task.help}" in text for name, task in TASKS.items())
    assert "full: sts + transfer" in text and "full_fast: sts + transfer_fast" in text


def test_dev_tasks_are_the_configs() -> None:
    assert set(dev_task_names()) == {"stsb_dev", "dev"}  # config.EvalConfig reads this list


def test_headlines_against_scipy(data_dir: Path) -> None:
    stsb = load_sts_task(data_dir, "STSBenchmark", "dev")["dev"]
    sick = load_sts_task(data_dir, "SICKRelatedness", "dev")["dev"]
    assert dev_score(bow_encode, data_dir, "stsb_dev") == pytest.approx(spearman_by_hand(stsb), abs=1e-9)
    both = (spearman_by_hand(stsb) + spearman_by_hand(sick)) / 2
    assert dev_score(bow_encode, data_dir, "dev") == pytest.approx(both, abs=1e-9)
    with pytest.raises(ValueError, match="unknown dev task 'sts'"):
        dev_score(bow_encode, data_dir, "sts")  # a test set never picks checkpoints
    with pytest.raises(ValueError, match="'anisotropy' has no headline score"):
        headline("anisotropy", {})


def test_format_results_uses_each_tasks_formatter() -> None:
    sts = {"STSBenchmark": {"spearman": 80.0, "pearson": 79.0, "n": 3}, "avg": 80.0}
    transfer = {"MR": {"acc": 70.0}, "avg": 70.0}
    other = {"spearman": 12.5, "table": [1, 2]}
    text = format_results({"m": {"stsb_dev": sts, "transfer": transfer, "pairs:x.tsv": other}})
    assert f"## stsb_dev\n{TASKS['stsb_dev'].format({'m': sts})}" in text
    assert f"## transfer\n{TASKS['transfer'].format({'m': transfer})}" in text
    assert "| STS-B | 80.00 |" in text and '"spearman": 12.5' in text and "table" not in text


def test_eval_help_lists_every_task() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "sentcl.cli", "eval", "--help"],
        capture_output=True,
        text=True,
        env={"COLUMNS": "4000", "PATH": "/usr/bin:/bin"},
        check=True,
    ).stdout
    flat = " ".join(out.split())
    assert all(f"{name}: {' '.join(task.help.split())}" in flat for name, task in TASKS.items())


def test_the_mteb_task_registers_itself_from_interop() -> None:
    """evaluation/ does not import interop/: the "mteb" task appears (last, once) when the adapter is
    imported (the CLI imports it before a command that evaluates runs); a second registration of a name is
    refused."""
    import subprocess
    import sys

    code = (
        "import sentcl.evaluation.runner as r\n"
        "assert 'mteb' not in r.TASKS, list(r.TASKS)\n"
        "import sentcl.interop.mteb_adapter\n"
        "assert list(r.TASKS)[-1] == 'mteb' and 'mteb' in r.task_names()\n"
        "try:\n"
        "    r.register_task(r.TASKS['mteb'])\n"
        "except ValueError as err:\n"
        "    print(err)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "evaluation task 'mteb' is already registered"
