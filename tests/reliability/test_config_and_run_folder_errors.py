"""Bad config files and run folders: each gives one error line naming the file and the key, or the folder.

Each row runs the real CLI in-process (``harness.Case``) on the tiny random BERT. Every row runs with the row's
own folder as the working folder, so a config that would write into "the current folder" writes there and the
check sees it. Two rows need more than one command and are ordinary tests below the table: D05 (two real
``sentcl train`` processes into one folder) and the help text's own PromptBERT example (C10).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from harness import Case, parametrize, run_case
from helpers.data import tiny_recipe, write_corpus

from sentcl.cli import main
from sentcl.files.read import YAML_MAX_NODES

ENV: dict[str, Path] = {}  # tiny model, data folder, a finished run: set by the fixtures
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory, tiny_bert: Path, data_dir: Path) -> Path:
    """One finished 4-step run (checkpoint-2, checkpoint-4, best/) that the resume rows copy."""
    ENV["model"], ENV["data"] = tiny_bert, data_dir
    folder = tmp_path_factory.mktemp("base")
    ENV["corpus"] = write_corpus(folder / "corpus.txt", 32)
    assert main(["train", "--config", str(recipe(folder))]) == 0
    ENV["run"] = folder / "run"
    return folder / "run"


@pytest.fixture(autouse=True)
def _env(base_run: Path) -> None:
    assert ENV["run"] == base_run


def recipe(folder: Path, sections: dict | None = None, **training: object) -> Path:
    data = sections or tiny_recipe(ENV["model"], ENV["data"], ENV["corpus"], folder / "run", **training)
    path = folder / "recipe.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def sections(folder: Path, **training: object) -> dict:
    return tiny_recipe(ENV["model"], ENV["data"], ENV["corpus"], folder / "run", **training)


def train(*extra: str) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        return ["train", "--config", str(recipe(folder)), *extra]

    return setup


def text_config(body: Callable[[Path], str], *extra: str) -> Callable[[Path], list[str]]:
    """Setup: the recipe's YAML text with ``body(folder)`` appended verbatim."""

    def setup(folder: Path) -> list[str]:
        path = recipe(folder)
        path.write_text(path.read_text(encoding="utf-8") + body(folder), encoding="utf-8")
        return ["train", "--config", str(path), *extra]

    return setup


def bomb(levels: int, width: int = 9) -> str:
    """A flow sequence of nested aliases: ``width ** levels`` leaves in a few hundred bytes."""
    items = ["&a0 [" + ", ".join(["lol"] * width) + "]"]
    items += [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "[" + ", ".join(items) + "]"


def bomb_recipe(folder: Path) -> list[str]:
    data = sections(folder)
    del data["eval"]["final_tasks"]
    path = recipe(folder, data)
    text = yaml.safe_dump(data).replace("eval:\n", f"eval:\n  final_tasks: {bomb(9)}\n", 1)
    path.write_text(text, encoding="utf-8")
    assert len(text.encode()) < 2000
    return ["train", "--config", str(path)]


def bomb_grid(folder: Path) -> list[str]:
    grid = folder / "grid.yaml"
    grid.write_text(
        f"title: t\nbase: {recipe(folder)}\nvariants: {{cpu: {{}}}}\npoints: [{{name: a}}]\n"
        f"description: {bomb(9)}\n",
        encoding="utf-8",
    )
    return ["experiment", str(grid)]


def duplicate_grid(folder: Path) -> list[str]:
    grid = folder / "grid.yaml"
    grid.write_text(
        f"title: t\nbase: {recipe(folder)}\nvariants: {{cpu: {{}}}}\npoints: [{{name: a}}]\ntitle: u\n",
        encoding="utf-8",
    )
    return ["experiment", str(grid)]


def encoded(codec: str) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        path = recipe(folder)
        path.write_bytes(path.read_text(encoding="utf-8").encode(codec))
        return ["train", "--config", str(path)]

    return setup


def latin1(folder: Path) -> list[str]:
    path = recipe(folder)
    path.write_bytes(path.read_bytes() + "# caf\xe9\n".encode("latin-1"))
    return ["train", "--config", str(path)]


def section_as(key: str, value: str) -> Callable[[Path], list[str]]:
    """Setup: the recipe with section ``key`` written as the scalar ``value`` (falsy: 0, "", false, [])."""

    def setup(folder: Path) -> list[str]:
        data = sections(folder)
        text = yaml.safe_dump({k: v for k, v in data.items() if k != key}) + f"{key}: {value}\n"
        path = folder / "recipe.yaml"
        path.write_text(text, encoding="utf-8")
        return ["train", "--config", str(path), "--output-dir", str(folder / "run")]

    return setup


def config_is(kind: str) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        path = folder / "cfg"
        if kind == "folder":
            path.mkdir()
        elif kind == "fifo":
            os.mkfifo(path)
        else:
            os.symlink(folder / "loop2", path)
            os.symlink(path, folder / "loop2")
        return ["train", "--config", str(path)]

    return setup


def scored_pairs(folder: Path) -> list[str]:
    pairs = folder / "equal.tsv"
    rows = [f"A sentence number {i}.\tAnother sentence {i}.\t3.0" for i in range(16)]
    pairs.write_text("sentence1\tsentence2\tscore\n" + "\n".join(rows) + "\n", encoding="utf-8")
    data = sections(folder)
    data["objective"] = {"name": "cosent"}
    data["data"]["train_file"] = str(pairs)
    data["model"]["pooler"] = "avg"
    return ["train", "--config", str(recipe(folder, data))]


def torn_metrics(where: str) -> Callable[[Path], list[str]]:
    """Setup: the finished run copied, its metrics.jsonl cut mid-line at the end (a kill) or in the middle."""

    def setup(folder: Path) -> list[str]:
        shutil.copytree(ENV["run"], folder / "run")
        metrics = folder / "run" / "metrics.jsonl"
        lines = metrics.read_text(encoding="utf-8").splitlines(keepends=True)
        if where == "last":
            metrics.write_text("".join(lines) + lines[-1][:37], encoding="utf-8")
        else:
            lines[2] = lines[2][:37] + "\n"
            metrics.write_text("".join(lines), encoding="utf-8")
        return [*train("--resume", "--set", "training.max_steps=6", "--set", "training.epochs=2")(folder)]

    return setup


# ---------------------------------------------------------------- checks


def no_run_folder(folder: Path, printed: str) -> None:
    assert not (folder / "run").exists(), "no work may start before the config is valid"


def nothing_in_cwd(folder: Path, printed: str) -> None:
    left = sorted(p.name for p in folder.iterdir() if p.name not in ("recipe.yaml", "corpus.txt"))
    assert left == [], f"the refused run wrote into the current folder: {left}"


def short_error(folder: Path, printed: str) -> None:
    (line,) = [x for x in printed.splitlines() if ": error: " in x]
    assert len(line) < 600, f"the error echoes {len(line)} characters"


def resumed_clean(folder: Path, printed: str) -> None:
    metrics = folder / "run" / "metrics.jsonl"
    records = [json.loads(x) for x in metrics.read_text(encoding="utf-8").splitlines()]  # every line JSON
    assert [r for r in records if r["event"] == "resume"], "the run resumed"
    assert max(r.get("step", 0) for r in records) == 6


def prompt_saved(folder: Path, printed: str) -> None:
    saved = json.loads((folder / "run" / "config.json").read_text(encoding="utf-8"))
    assert saved["model"]["prompt_templates"] == [PROMPT]


PROMPT = 'This sentence : "[X]" means [MASK] .'


def promptbert(template_arg: str) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        extra = [
            "--set",
            "objective.name=promptbert",
            "--set",
            "model.pooler=mask",
            "--set",
            "model.max_length=48",
        ]
        return [*train(*extra, "--set", f"model.prompt_templates={template_arg}")(folder)]

    return setup


# ---------------------------------------------------------------- the table

CASES = [
    # C02: alias bombs, in every place YAML is read; any echoed value is a short preview
    Case("C02-bomb-recipe", bomb_recipe, rf"recipe\.yaml: its aliases .* more than {YAML_MAX_NODES:,}"),
    Case("C02-bomb-set", train("--set", f"eval.final_tasks={bomb(9)}"), r"--set eval\.final_tasks: its alias"),
    Case("C02-bomb-grid", bomb_grid, r"grid file .*grid\.yaml: its aliases .* refused"),
    Case(
        "C02-preview",
        train("--set", f"training.device={bomb(4)}"),
        r"training\.device=.*\.\.\..* has the wrong type",
        check=short_error,
    ),
    Case("C02-preview-set-text", train("--set", "training.device=" + "x" * 200_000), r"device=.*\.\.\.", check=short_error),
    # C03: a key written twice, at any depth, also in grids
    Case("C03-top", text_config(lambda f: "training: {batch_size: 64}\n"), r"recipe\.yaml is not valid YAML: line \d+, column 1: duplicate key 'training' \(first at line \d+\)"),
    Case("C03-nested", text_config(lambda f: "x: {seed: 1, seed: 2}\n"), r"duplicate key 'seed' \(first at line"),
    Case("C03-grid", duplicate_grid, r"grid\.yaml.*duplicate key 'title' \(first at line 1\)"),
    # C04: bytes that are not UTF-8 name the file
    Case("C04-utf16", encoded("utf-16"), r"recipe\.yaml is not UTF-8 text \(it starts with a UTF-16 byte-order mark\).*save it as UTF-8"),
    Case("C04-latin1", latin1, r"recipe\.yaml is not UTF-8 text: byte \d+ .*save it as UTF-8"),
    # C05: a section written as a falsy scalar is refused, naming the key
    Case("C05-eval-0", section_as("eval", "0"), r"eval must be a mapping .* got int 0", check=no_run_folder),
    Case("C05-data-empty", section_as("data", '""'), r"data must be a mapping .* got str ''", check=no_run_folder),
    Case("C05-objective-false", section_as("objective", "false"), r"objective must be a mapping .* got bool False"),
    Case("C05-training-list", section_as("training", "[]"), r"training must be a mapping .* got list \[\]"),
    # C06: --config that is no regular file says what it is
    Case("C06-folder", config_is("folder"), r"config file .*cfg is a directory, not a file"),
    Case("C06-fifo", config_is("fifo"), r"config file .*cfg is a FIFO \(named pipe\), not a regular file"),
    Case("C06-loop", config_is("loop"), r"config file .*cfg is a symbolic link loop"),
    # C07 / C10: --set text YAML cannot read
    Case("C07-unclosed", train("--set", "training.batch_size=[1"), r"--set training\.batch_size='\[1': the value is not valid YAML .*quote"),
    Case("C10-template", promptbert(PROMPT), None, code=0, check=prompt_saved),
    Case("C10-template-quoted", promptbert(f"'{PROMPT}'"), None, code=0, check=prompt_saved),
    # C20: a seed outside 0..2**32-1, before any run folder
    Case("C20-seed-2-70", train("--set", f"training.seed={2**70}"), r"training\.seed must be between 0 and 2\*\*32 - 1", check=no_run_folder),
    Case("C20-seed-negative", train("--set", "training.seed=-1"), r"training\.seed must be between", check=no_run_folder),
    # C22: an output folder that is the current folder
    Case("C22-empty", train("--set", "training.output_dir=''"), r"output_dir='' would write the run into the current folder", check=nothing_in_cwd),
    Case("C22-blank", train("--output-dir", "   "), r"output_dir='   ' would write", check=nothing_in_cwd),
    Case("C22-dot", train("--output-dir", "."), r"output_dir='\.' would write", check=nothing_in_cwd),
    Case("C22-dot-slash", train("--output-dir", "sub/.."), r"output_dir='sub/\.\.' would write", check=nothing_in_cwd),
    # T07: CoSENT on scores that are all equal
    Case("T07-equal-scores", scored_pairs, r"cosent: every score in .*equal\.tsv is 3\.0"),
    # D12: a torn metrics.jsonl line on --resume
    Case("D12-torn-last", torn_metrics("last"), None, code=0, check=resumed_clean),
    Case("D12-torn-middle", torn_metrics("middle"), r"metrics\.jsonl:3: not valid JSON"),
]  # fmt: skip


@parametrize(CASES)
def test_case(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    run_case(case, tmp_path, capsys)
    if case.id.startswith("C02"):
        assert time.monotonic() - started < 30, "an alias bomb must be refused at once"


def test_help_example_template_works(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """C10: the PromptBERT template that ``sentcl train --help`` gives as its example, passed to --set as the
    help writes it, loads as that one template."""
    from sentcl.config import TrainConfig, load_config

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    example = re.search(r"e\.g\. '(This sentence[^']*)'", help_text)
    assert example is not None and example.group(1) == PROMPT
    for arg in (example.group(1), f"'{example.group(1)}'"):
        cfg = load_config(
            TrainConfig,
            None,
            ["objective.name=promptbert", "model.pooler=mask", f"model.prompt_templates={arg}"],
        )
        assert cfg.model.prompt_templates == [PROMPT]


@pytest.mark.slow
def test_two_trainings_into_one_folder(tmp_path: Path) -> None:
    """D05: a second ``sentcl train`` into a folder that a running one holds is refused with the holder's PID,
    and the first run's files are untouched by it. Two real processes."""
    out = tmp_path / "run"
    first = recipe(
        tmp_path, sections(tmp_path, max_steps=2000, epochs=1000, eval_steps=0, save_steps=0, seed=1)
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    cli = [sys.executable, "-m", "sentcl.cli"]
    holder = subprocess.Popen(
        [*cli, "train", "--config", str(first)], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        lock = out / ".sentcl-train.lock"
        deadline = time.monotonic() + 240
        while not (lock.is_file() and lock.read_text().strip() == str(holder.pid)):
            assert holder.poll() is None, holder.stderr.read() if holder.stderr else ""
            assert time.monotonic() < deadline, "the first run never locked its folder"
            time.sleep(0.2)
        second = subprocess.run(
            [*cli, "train", "--config", str(first), "--set", "training.seed=2", "--resume"],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert second.returncode == 2, second.stderr
        assert f"is in use by another sentcl train (PID {holder.pid}" in second.stderr
        assert "Traceback" not in second.stderr
        third = subprocess.run(
            [*cli, "train", "--config", str(first), "--set", "training.seed=2"],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert third.returncode == 2 and f"PID {holder.pid}" in third.stderr, third.stderr
        assert holder.poll() is None, "the first run held its folder throughout"
        assert json.loads((out / "config.json").read_text())["training"]["seed"] == 1
    finally:
        holder.kill()
        holder.wait()
