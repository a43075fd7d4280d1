"""User input that gave an unclear error or a silent wrong result: grid files
(``vary: {}``, a paper value that is text), mining bounds (NaN, inverted), an empty search query, a repeated
``--truncate-dims``, ``$SENTCL_DATA`` naming a file. Each row runs the real CLI in-process on the tiny random
BERT (``tests/reliability/harness.py``): one error line naming the problem, no traceback, nothing written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from harness import Case, parametrize, run_case
from helpers.data import write

ENV: dict[str, Path] = {}
PATCH: list[pytest.MonkeyPatch] = []


@pytest.fixture(autouse=True)
def _env(tiny_bert: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ENV["model"] = tiny_bert
    PATCH[:] = [monkeypatch]


def grid(text: str) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        path = write(
            folder, "g.yaml", "title: t\nbase: demo\nvariants: {cpu: {training.max_steps: 2}}\n" + text
        )
        return ["experiment", str(path), "--runs-dir", str(folder / "runs"), "--dry-run"]

    return setup


def mine(*bounds: str) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        pairs = write(folder, "p.csv", "anchor,positive\na dog,a puppy\na cat,a kitten\nrain,water\n")
        out = str(folder / "out.csv")
        return ["mine", "--model", str(ENV["model"]), "--pairs", str(pairs), "--output", out, *bounds]

    return setup


def nothing_written(name: str) -> Callable[[Path, str], None]:
    def check(folder: Path, _: str) -> None:
        assert not (folder / name).exists()

    return check


def data_env_is_a_file(argv: Callable[[Path], list[str]]) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        PATCH[0].setenv("SENTCL_DATA", str(write(folder, "afile.txt", "x\n")))  # undone after the test
        return argv(folder)

    return setup


CASES = [
    Case("G_emptyvary", grid("vary: {}\n"), r"g\.yaml: the grid has no points"),
    Case(
        "G_paperstr",
        grid("vary: {objective.temperature: [0.05]}\npaper: {values: {'0.05': n/a}}\n"),
        r"g\.yaml: paper\.values\.0\.05 must be a number \(the paper's score\), got 'n/a'",
    ),
    Case(
        "MN_maxscore_nan",
        mine("--max-score", "nan"),
        r"--max-score: must be a finite number, got 'nan'",
        check=nothing_written("out.csv"),
    ),
    Case(
        "MN_score_inverted",
        mine("--max-score", "0.1", "--min-score", "0.9"),
        r"--min-score 0\.9 is above --max-score 0\.1: no candidate can pass both",
        check=nothing_written("out.csv"),
    ),
    Case(
        "MISC_search_emptyq",
        lambda f: [
            "search",
            "--model",
            str(ENV["model"]),
            "--corpus",
            str(write(f, "c.txt", "a\nb\n")),
            "--query",
            "",
        ],
        r"--query number 1 is empty",
    ),
    Case(
        "EV_data_file",
        data_env_is_a_file(
            lambda f: ["train", "--config", "demo", "--set", f"training.output_dir={f / 'run'}"]
        ),
        r"afile\.txt \(from \$SENTCL_DATA\) is a file, not a folder",
        check=nothing_written("run"),
    ),
    Case(
        "EV_data_eval_file",
        data_env_is_a_file(lambda f: ["eval", "--model", str(ENV["model"]), "--tasks", "stsb_dev"]),
        r"afile\.txt \(from \$SENTCL_DATA\) is a file, not a folder",
    ),
]


@parametrize(CASES)
def test_user_input_gets_one_clear_error(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_case(case, tmp_path, capsys)


def test_repeated_truncate_dims_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    """Reliability row MISC_eval_truncdims_dup: "invalid parse_dims value: '384,384'" named a function, no reason."""
    from sentcl.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["eval", "--model", str(ENV["model"]), "--truncate-dims", "32,32", "--tasks", "stsb_dev"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --truncate-dims: expects distinct positive whole numbers, got '32,32'" in err
    assert "parse_dims" not in err
