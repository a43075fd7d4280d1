"""``sentcl train`` against bad configs, bad run folders, faults while writing checkpoints.

Each row runs the real CLI in-process on the tiny random BERT (tests/conftest.py) for a few steps. Rows that
need a finished run copy one trained once per module (``base_run``: 4 steps, checkpoints at 2 and 4). Faults
that are not an input (a crafted pickle, a kill between two renames, a truncated state file, a full disk, a
read-only filesystem) are ordinary tests below the table. A read-only filesystem is simulated in-process by
making ``os.mkdir``/``os.open`` fail with EROFS below the folder (the tests run as root, where chmod does not
stop writes, and mounting needs privileges CI lacks); a full disk by a ``torch.save`` that writes part of the
file and then fails with ENOSPC.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import yaml
from harness import Case, parametrize, run_case
from helpers.data import tiny_recipe, write_corpus
from safetensors.torch import load_file

import sentcl.files.atomic as atomic_module
from sentcl.cli import main
from sentcl.files.atomic import atomic_dir_write
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.training import checkpoint as ckpt_module
from sentcl.training.checkpoint import STATE_FILE, load_state

ENV: dict[str, Path] = {}  # tiny model, data folder, the module's finished run: set by the fixtures


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory, tiny_bert: Path, data_dir: Path) -> Path:
    """One finished 4-step run (checkpoint-2, checkpoint-4, best/, results.json) that rows copy."""
    ENV["model"], ENV["data"] = tiny_bert, data_dir
    folder = tmp_path_factory.mktemp("base")
    corpus = write_corpus(folder / "corpus.txt", 32)
    assert main(["train", "--config", str(recipe(folder, corpus=corpus))]) == 0
    ENV["run"], ENV["corpus"] = folder / "run", corpus
    return folder / "run"


@pytest.fixture(autouse=True)
def _env(base_run: Path) -> None:
    assert ENV["run"] == base_run


def recipe(folder: Path, corpus: Path | None = None, raw: str | None = None, **training: object) -> Path:
    """A tiny training recipe in ``folder``; ``raw`` replaces the training section's YAML text verbatim."""
    corpus = corpus or ENV.get("corpus") or write_corpus(folder / "corpus.txt", 32)
    sections = tiny_recipe(ENV["model"], ENV["data"], corpus, folder / "run", **training)
    text = yaml.safe_dump(sections)
    if raw is not None:
        text += raw
    path = folder / "recipe.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def train(*extra: str, **training: object) -> Callable[[Path], list[str]]:
    """Setup: a recipe in the row's folder (training keys overridden), then ``sentcl train`` with ``extra``."""

    def setup(folder: Path) -> list[str]:
        return ["train", "--config", str(recipe(folder, **training)), *extra]

    return setup


def copy_run(*extra: str, prepare: Callable[[Path], None] | None = None, **training: object):  # noqa: ANN201
    """Setup: the module's finished run copied to ``folder/run`` (``prepare`` edits it), then train there."""

    def setup(folder: Path) -> list[str]:
        shutil.copytree(ENV["run"], folder / "run")
        if prepare is not None:
            prepare(folder / "run")
        return ["train", "--config", str(recipe(folder, **training)), *extra]

    return setup


def yaml_text(text: str, *extra: str) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        path = folder / "bad.yaml"
        path.write_text(text, encoding="utf-8")
        return ["train", "--config", str(path), "--output-dir", str(folder / "run"), *extra]

    return setup


def in_model_folder(*extra: str) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        shutil.copytree(ENV["model"], folder / "run")
        return ["train", "--config", str(recipe(folder)), *extra]

    return setup


def output_is_file(under: bool) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        (folder / "taken").write_text("a file\n", encoding="utf-8")
        out = folder / "taken" / "run" if under else folder / "taken"
        return ["train", "--config", str(recipe(folder)), "--output-dir", str(out)]

    return setup


# ---------------------------------------------------------------- checks


def no_run_folder(folder: Path, printed: str) -> None:
    assert not (folder / "run").exists(), "no work may start before the config is valid"


def model_intact(folder: Path, printed: str) -> None:
    assert json.loads((folder / "run" / "config.json").read_text())["model_type"] == "bert"
    SentenceEncoder.from_pretrained(str(folder / "run"))  # still loads


def run_untouched(folder: Path, printed: str) -> None:
    saved = json.loads((folder / "run" / "config.json").read_text())
    assert saved == json.loads((ENV["run"] / "config.json").read_text()), (
        "the refused run rewrote config.json"
    )
    assert sorted(p.name for p in (folder / "run").iterdir()) == sorted(p.name for p in ENV["run"].iterdir())


def diverged(folder: Path, printed: str) -> None:
    run = folder / "run"
    assert (run / "checkpoint-1" / STATE_FILE).is_file(), "the last good checkpoint is kept"
    assert not (run / "best").exists() and not (run / "results.json").exists()
    weights = load_file(str(run / "checkpoint-1" / "model" / "model.safetensors"))
    assert all(bool(torch.isfinite(t).all()) for t in weights.values())


def resumed_with(*changes: str) -> Callable[[Path, str], None]:
    def check(folder: Path, printed: str) -> None:
        records = [json.loads(x) for x in (folder / "run" / "metrics.jsonl").read_text().splitlines()]
        resume = [r for r in records if r["event"] == "resume"][-1]
        logged = " ".join(resume["config_changes"])
        for change in changes:
            assert change in logged, (change, logged)
        assert json.loads((folder / "run" / "results.json").read_text())["global_step"] >= 4

    return check


def learning_rate_is(value: float) -> Callable[[Path, str], None]:
    def check(folder: Path, printed: str) -> None:
        saved = json.loads((folder / "run" / "config.json").read_text())
        assert saved["training"]["learning_rate"] == value

    return check


def resume_with_corpus(same: bool) -> Callable[[Path], list[str]]:
    """Setup: resume the copied run on another training file, or on the same one moved elsewhere."""

    def setup(folder: Path) -> list[str]:
        shutil.copytree(ENV["run"], folder / "run")
        corpus = folder / "moved.txt"
        if same:
            shutil.copy(ENV["corpus"], corpus)
        else:
            write_corpus(corpus, 32, seed=7)
        return [
            "train",
            "--config",
            str(recipe(folder, corpus=corpus)),
            "--resume",
            "--set",
            "training.max_steps=5",
        ]

    return setup


def resume_after_editing_the_corpus(folder: Path) -> list[str]:
    """Setup: the copied run's training file (moved into the row's folder) was edited since the run."""
    shutil.copytree(ENV["run"], folder / "run")
    corpus = write_corpus(folder / "corpus.txt", 32, seed=9)
    saved = json.loads((folder / "run" / "config.json").read_text())
    saved["data"]["train_file"] = str(corpus)
    (folder / "run" / "config.json").write_text(json.dumps(saved), encoding="utf-8")
    return ["train", "--config", str(recipe(folder, corpus=corpus)), "--resume"]


# ---------------------------------------------------------------- the table

CASES = [
    # 1. non-finite training
    Case("1a-nan-yaml", yaml_text("training: {learning_rate: .nan}\n"), r"learning_rate=nan is not a finite"),
    Case("1b-inf-yaml", yaml_text("objective: {temperature: .inf}\n"), r"temperature=inf is not a finite"),
    Case("1c-nan-set", yaml_text("{}\n", "--set", "training.learning_rate=nan"), r"learning_rate=nan is not"),
    Case(
        "1d-inf-set",
        yaml_text("objective: {name: cutoff_triplet}\n", "--set", "objective.margin=.inf"),
        r"objective\.margin=inf is not",
    ),
    Case(
        "1e-loss-nan-lr-1e6",
        train(learning_rate=1e6, save_steps=1, eval_steps=0),
        r"the (loss|gradient norm) is (nan|-?inf) at step [2-4] \(learning rate [0-9.e+]+\).*last good checkpoint is kept",
        code=1,
        check=diverged,
    ),
    # 4. output_dir holds a model or another run
    Case(
        "4a-output-is-model",
        in_model_folder(),
        r"run holds a model \(.*config\.json\).*new folder",
        check=model_intact,
    ),
    Case(
        "4b-output-is-model-resume", in_model_folder("--resume"), r"no checkpoint-<step>", check=model_intact
    ),
    Case(
        "4c-output-is-other-run",
        copy_run(),
        r"holds another run \(checkpoint-2, checkpoint-4, best, results",
        check=run_untouched,
    ),
    # 5. --resume with a changed config
    Case(
        "5a-resume-lr-changed",
        copy_run("--resume", learning_rate=0.01),
        r"break the resume: training\.learning_rate: 0\.001 -> 0\.01 \(only these may change: [^)]*training\.max_steps",
        check=run_untouched,
    ),
    Case(
        "5b-resume-batch-and-pooler",
        copy_run("--resume", "--set", "model.pooler=avg", batch_size=4),
        r"model\.pooler: 'cls' -> 'avg'; training\.batch_size: 8 -> 4",
        check=run_untouched,
    ),
    Case(
        "5c-resume-other-train-file",
        resume_with_corpus(same=False),
        r"break the resume: data\.train_file: .*moved\.txt has other contents than the run's \(only",
        check=run_untouched,
    ),
    Case(
        "5f-resume-train-file-edited-in-place",
        resume_after_editing_the_corpus,
        r"break the resume: data\.train_file: .*corpus\.txt has other contents than the run's \(only",
    ),
    Case(
        "5e-resume-moved-train-file",
        resume_with_corpus(same=True),
        None,
        check=resumed_with("moved.txt' (same contents)", "training.max_steps: 4 -> 5"),
    ),
    Case(
        "5d-resume-safe-changes",
        copy_run("--resume", "--set", "eval.final_tasks=[stsb_dev]", max_steps=5, log_steps=2, eval_steps=5),
        None,
        check=resumed_with("training.max_steps: 4 -> 5", "training.log_steps: 1 -> 2", "training.eval_steps"),
    ),
    # 7. late errors, made early
    Case(
        "7a-dev-task-sts",
        yaml_text("eval: {dev_task: sts}\n"),
        r"eval\.dev_task='sts' is not valid; choose one of: stsb_dev, dev",
        check=no_run_folder,
    ),
    Case(
        "7b-yaml-1e-5",
        train(learning_rate="1e-5", max_steps=1, eval_steps=0, save_steps=0),
        None,
        check=learning_rate_is(1e-5),
    ),
    Case(
        "7c-set-1e-5",
        train("--set", "training.learning_rate=2e-5", max_steps=1, eval_steps=0, save_steps=0),
        None,
        check=learning_rate_is(2e-5),
    ),
    Case(
        "7d-yaml-top-list",
        yaml_text("- training\n- model\n"),
        r"bad\.yaml must be a mapping of sections .* got a list",
    ),
    Case("7e-yaml-top-scalar", yaml_text("42\n"), r"bad\.yaml must be a mapping of sections .* got a int"),
    Case(
        "7f-yaml-top-list-set", yaml_text("[1]\n", "--set", "training.seed=1"), r"bad\.yaml must be a mapping"
    ),
    # 8. OS errors: the output folder
    Case(
        "8a-output-is-file",
        output_is_file(under=False),
        r"training\.output_dir .*taken is a file, not a folder",
    ),
    Case("8b-output-under-file", output_is_file(under=True), r"taken/run is under .*taken, which is a file"),
]


@parametrize(CASES)
def test_training_case(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_case(case, tmp_path, capsys)


# ---------------------------------------------------------------- 9. checkpoints (rows)


def add_stale(run: Path) -> None:
    """What interrupted writes leave: an unfinished checkpoint, a replaced copy whose name exists again."""
    (run / ".tmp-checkpoint-6-0123abcd").mkdir()
    (run / ".tmp-checkpoint-6-0123abcd" / "half.bin").write_bytes(b"\0" * 10)
    shutil.copytree(run / "checkpoint-2", run / ".old-checkpoint-2-89abcdef")
    (run / ".tmp-results.json-4567cdef").write_text("{", encoding="utf-8")


def no_stale(folder: Path, printed: str) -> None:
    left = [p.name for p in (folder / "run").iterdir() if p.name.startswith((".tmp-", ".old-"))]
    assert not left, left


CASES_9 = [
    Case(
        "9a-stale-tmp-old-removed", copy_run("--resume", prepare=add_stale, max_steps=5), None, check=no_stale
    ),
]


@parametrize(CASES_9)
def test_checkpoint_case(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_case(case, tmp_path, capsys)


# ---------------------------------------------------------------- faults that are not an input


def strict_json(text: str) -> object:
    def refuse(name: str) -> None:
        raise AssertionError(f"bare {name} in JSON")

    return json.loads(text, parse_constant=refuse)


def test_2_training_state_loads_with_weights_only(base_run: Path) -> None:
    payload = torch.load(base_run / "checkpoint-4" / STATE_FILE, weights_only=True)
    assert payload["state"]["global_step"] == 4 and set(payload) >= {"model", "optimizer", "rng"}


class _WritesMarker:
    """Unpickling this object would call ``open(marker, 'w')``: code run by loading a file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # noqa: ANN204
        return (open, (str(self.marker), "w"))


def test_2_crafted_training_state_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "pwned"

    def craft(run: Path) -> None:
        torch.save({"state": _WritesMarker(marker)}, run / "checkpoint-4" / STATE_FILE)

    case = Case(
        "2-crafted-pickle",
        copy_run("--resume", prepare=craft),
        r"refusing to load .*checkpoint-4/training_state\.pt: it holds Python objects",
        code=1,
    )
    run_case(case, tmp_path, capsys)
    assert not marker.exists(), "loading the crafted file ran its code"


def test_9_truncated_state_falls_back_and_resumes_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    def truncate(run: Path) -> None:
        state = run / "checkpoint-4" / STATE_FILE
        state.write_bytes(state.read_bytes()[: state.stat().st_size // 2])

    run_case(Case("9c-truncated-state", copy_run("--resume", prepare=truncate), None), tmp_path, capsys)
    assert "checkpoint-4/training_state.pt is truncated or corrupt" in caplog.text
    records = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if r["event"] == "resume"] == [2]
    expected = load_file(str(ENV["run"] / "checkpoint-4" / "model" / "model.safetensors"))
    resumed = load_file(str(tmp_path / "run" / "checkpoint-4" / "model" / "model.safetensors"))
    for key, value in expected.items():
        assert torch.equal(resumed[key], value), key  # bit for bit the uninterrupted run


def test_9_kill_between_the_renames_of_best(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the OS cannot swap two folders atomically, best/ takes two renames; a kill between them leaves
    .old-best-*, which the next start puts back (and the run then finishes on it)."""
    run = tmp_path / "run"
    shutil.copytree(ENV["run"], run)
    before = (run / "best" / "model.safetensors").read_bytes()
    monkeypatch.setattr(atomic_module, "_exchange", lambda a, b: False)
    real_rename = Path.rename

    def killed_at_second_rename(self: Path, target: Path) -> Path:
        if self.name.startswith(".tmp-best-"):
            raise KeyboardInterrupt  # the process dies here: best/ renamed away, the new one not yet in place
        return real_rename(self, target)

    monkeypatch.setattr(Path, "rename", killed_at_second_rename)
    with pytest.raises(KeyboardInterrupt):
        atomic_dir_write(run / "best", lambda tmp: shutil.copytree(ENV["run"] / "best", tmp))
    monkeypatch.setattr(Path, "rename", real_rename)
    assert not (run / "best").exists() and list(run.glob(".old-best-*")) and list(run.glob(".tmp-best-*"))
    recipe(tmp_path, max_steps=4)
    assert main(["train", "--config", str(tmp_path / "recipe.yaml"), "--resume"]) == 0
    assert (run / "best" / "model.safetensors").read_bytes() == before
    assert not list(run.glob(".old-*")) and not list(run.glob(".tmp-*"))
    SentenceEncoder.from_pretrained(str(run / "best"))


@pytest.mark.skipif(sys.platform != "linux", reason="atomic exchange of two folders is Linux's renameat2")
def test_9_replacing_best_never_leaves_a_gap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On Linux the new best/ is swapped in with one atomic exchange: best/ is never renamed away."""
    target = tmp_path / "best"
    target.mkdir()
    (target / "f").write_text("old")
    moved_away: list[str] = []
    real_rename = Path.rename
    monkeypatch.setattr(
        Path, "rename", lambda self, t: (moved_away.append(self.name), real_rename(self, t))[1]
    )
    atomic_dir_write(target, lambda tmp: (tmp.mkdir(), (tmp / "f").write_text("new")))
    assert (target / "f").read_text() == "new"
    assert "best" not in moved_away and not moved_away, moved_away
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best"]


def test_9_files_and_folders_are_fsynced_before_the_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, str]] = []
    real_fsync, real_rename = os.fsync, Path.rename

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(
        Path, "rename", lambda self, t: (events.append(("rename", str(self))), real_rename(self, t))[1]
    )
    monkeypatch.setattr(atomic_module, "_exchange", lambda a, b: False)

    def write(tmp: Path) -> None:
        (tmp / "model").mkdir(parents=True)
        (tmp / "model" / "w.bin").write_bytes(b"1234")
        ckpt_module.save_state({"x": torch.ones(2)}, tmp / STATE_FILE)

    atomic_dir_write(tmp_path / "checkpoint-1", write)
    first_rename = next(i for i, e in enumerate(events) if e[0] == "rename")
    synced = {Path(p).name for kind, p in events[:first_rename] if kind == "fsync"}
    assert {STATE_FILE, "w.bin", "model"} <= synced and any(n.startswith(".tmp-checkpoint-1") for n in synced)
    assert events[-1] == ("fsync", str(tmp_path)), "the folder holding the new name is synced last"


def test_8_full_disk_during_a_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_save, calls = torch.save, []

    def save_until_disk_full(obj: object, handle: object, *args: object, **kw: object) -> None:
        calls.append(1)
        if len(calls) == 1:
            return real_save(obj, handle, *args, **kw)
        handle.write(b"PK\3\4 partial")  # type: ignore[attr-defined]
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(ckpt_module.torch, "save", save_until_disk_full)
    case = Case(
        "8c-disk-full-checkpoint",
        train(save_steps=1, eval_steps=0),
        r"could not write .*run/checkpoint-2: No space left on device \(the previous checkpoints are kept\)",
        code=1,
        check=no_stale,
    )
    run_case(case, tmp_path, capsys)
    assert load_state(tmp_path / "run" / "checkpoint-1" / STATE_FILE)["state"]["global_step"] == 1


def test_8_read_only_filesystem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    read_only = tmp_path / "mnt"
    read_only.mkdir()
    real_mkdir, real_open = os.mkdir, os.open

    def refuse(path: object) -> None:
        if str(path).startswith(str(read_only)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    monkeypatch.setattr(os, "mkdir", lambda p, *a, **k: (refuse(p), real_mkdir(p, *a, **k))[1])
    monkeypatch.setattr(os, "open", lambda p, *a, **k: (refuse(p), real_open(p, *a, **k))[1])
    case = Case(  # refused before the work by the output folders' probe: a write the OS refused, exit 1
        "8d-read-only-fs",
        train("--output-dir", str(read_only / "run")),
        r"cannot write training\.output_dir .*mnt/run: Read-only file system",
        code=1,
    )
    run_case(case, tmp_path, capsys)
    assert list(read_only.iterdir()) == []  # nothing half-made


def test_1_nan_score_is_never_best(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sentcl.training import evaluation_hooks

    scores = iter([float("nan"), 0.25])
    monkeypatch.setattr(evaluation_hooks, "dev_evaluation", lambda *a, **k: (next(scores), None))
    monkeypatch.setattr(
        evaluation_hooks, "evaluate", lambda *a, **k: {"stsb_dev": {"spearman": float("nan")}}
    )
    run_case(Case("1f-nan-score-not-best", train(), None), tmp_path, capsys)
    results = strict_json((tmp_path / "run" / "results.json").read_text())
    assert results["best_step"] == 4 and results["best_dev_score"] == 0.25  # type: ignore[index]
    assert results["results"] == {"stsb_dev": {"spearman": None}}  # type: ignore[index]
    evals = [strict_json(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [(r["stsb_dev"], r["best"]) for r in evals if r["event"] == "eval"] == [
        (None, False),
        (0.25, True),
    ]


def test_1_no_finite_score_means_no_best(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sentcl.training import evaluation_hooks

    monkeypatch.setattr(evaluation_hooks, "dev_evaluation", lambda *a, **k: (float("nan"), None))
    case = Case("1g-all-scores-nan", train(), r"no evaluation gave a finite stsb_dev score", code=1)
    run_case(case, tmp_path, capsys)
    assert not (tmp_path / "run" / "best").exists() and not (tmp_path / "run" / "results.json").exists()
    assert (tmp_path / "run" / "checkpoint-4" / STATE_FILE).is_file()


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="POSIX file size limits")
@pytest.mark.parametrize("limit", [200_000, 50_000], ids=["state-file-writer", "safetensors-writer"])
def test_8_real_write_failure_during_a_checkpoint(
    limit: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real failed write from the kernel (EFBIG under RLIMIT_FSIZE, the same path as a full disk's ENOSPC),
    in torch's writer (the state file, > 200 kB) or safetensors' Rust writer (the model, ~100 kB)."""
    case = Case(
        f"8e-write-fails-{limit}",
        train(save_steps=1, eval_steps=0),
        r"could not write .*run/checkpoint-1: .*File too large.* \(the previous checkpoints are kept\)",
        code=1,
        check=no_stale,
    )
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead of killing
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        run_case(case, tmp_path, capsys)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)
    assert not list((tmp_path / "run").glob("checkpoint-*"))
