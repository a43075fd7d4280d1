"""The CLI's help, the README's commands, encode/eval plumbing, and the promised errors on bad input."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy.stats import spearmanr

from sentcl.cli import main
from sentcl.modeling.encoder import SentenceEncoder

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=600, **kw)


@pytest.mark.parametrize(
    "command",
    [  # the two over 10 s in make test-fast's durations are slow (docs/guides/development.md, "Tests mirror the packages")
        pytest.param([], marks=pytest.mark.slow),
        ["train"],
        pytest.param(["eval"], marks=pytest.mark.slow),
        ["encode"],
    ],
    ids=lambda c: " ".join(c) or "top",
)
def test_help_runs(command: list[str]) -> None:
    result = run(sys.executable, "-m", "sentcl.cli", *command, "--help")
    assert result.returncode == 0, result.stderr
    assert "usage: sentcl" in result.stdout
    if command == ["train"]:
        assert "training.batch_size" in result.stdout and "Sentences (not views) per batch" in result.stdout


def test_console_script_installed() -> None:
    script = Path(sys.executable).parent / "sentcl"
    result = run(str(script), "--help")
    assert result.returncode == 0 and "train" in result.stdout


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"^```(?:bash|sh)\n(.*?)^```", text, re.S | re.M)  # the first shell block
    assert block, "README has a shell block of commands"
    lines = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line]


def test_readme_opens_with_the_two_setup_commands() -> None:
    """Its first shell block (after the Python of a first embedding) is the two set-up commands."""
    assert readme_commands()[:2] == ["make demo", "make test"]
    dry = run("make", "-n", "test")
    assert dry.returncode == 0 and "pytest" in dry.stdout


@pytest.mark.slow
def test_readme_demo_command_runs(tmp_path: Path, tiny_bert: Path, corpus_file: Path) -> None:
    """`make demo` itself, shrunk to the tiny model and two steps through DEMO_ARGS."""
    args = " ".join(
        [
            f"--set model.name_or_path={tiny_bert}",
            f"--set data.train_file={corpus_file}",
            "--set training.batch_size=8",
            "--set training.max_steps=2",
            "--set training.eval_steps=2",
            "--set training.progress=false",
            "--set eval.final_tasks=[stsb]",
            f"--output-dir {tmp_path / 'run'}",
        ]
    )
    result = run("make", "demo", f"DEMO_ARGS={args}")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "best stsb_dev" in result.stdout
    assert (tmp_path / "run" / "best" / "config.json").is_file()


def test_encode_cli_keeps_rows_aligned(tmp_path: Path, tiny_bert: Path) -> None:
    lines = ["a dog runs", "", "the man is playing music"]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "emb.npy"
    assert (
        main(
            [
                "encode",
                "--model",
                str(tiny_bert),
                "--pooler",
                "avg",
                "--input",
                str(tmp_path / "in.txt"),
                "--output",
                str(out),
            ]
        )
        == 0
    )
    emb = np.load(out)
    assert emb.shape == (3, 32)
    direct = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg").encode(lines)
    np.testing.assert_allclose(emb, direct, rtol=1e-5, atol=1e-6)


def run_eval(model: Path, data_dir: Path, out: Path, *tasks: str) -> dict:
    args = [
        "eval",
        "--model",
        str(model),
        "--pooler",
        "avg",
        "--data-dir",
        str(data_dir),
        "--output",
        str(out),
    ]
    assert main([*args, "--tasks", *tasks]) == 0
    return json.loads(out.read_text())


def stsb_rows(data_dir: Path, split: str) -> list[list[str]]:
    """STS-B read by hand: genre, file, year, id, score, sentence1, sentence2."""
    text = (data_dir / f"senteval/STS/STSBenchmark/sts-{split}.csv").read_text(encoding="utf-8")
    return [line.split("\t") for line in text.splitlines()]


def test_eval_cli_matches_scipy(tmp_path: Path, tiny_bert: Path, data_dir: Path) -> None:
    result = run_eval(tiny_bert, data_dir, tmp_path / "r.json", "stsb_dev")
    pairs = stsb_rows(data_dir, "dev")  # independent: cosine + scipy Spearman
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    a, b = model.encode([p[5] for p in pairs]), model.encode([p[6] for p in pairs])
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    expected = 100 * spearmanr(cos, [float(p[4]) for p in pairs]).statistic
    # A random tiny BERT gives near-tied cosines (all close to 1): batching differences of ~1e-7 reorder some
    # ranks, so only plumbing is checked here (exact aggregation is tested in test_sts.py with a fixed encoder).
    assert result["stsb_dev"]["STSBenchmark"]["spearman"] == pytest.approx(expected, abs=1.0)
    assert result["stsb_dev"]["STSBenchmark"]["n"] == 1500


# ------------------------------------------------------------------------------------------- bad input


def train_with(tmp_path: Path, tiny_bert: Path, corpus: Path, data_dir: Path, *overrides: str) -> int:
    recipe = {
        "model": {"name_or_path": str(tiny_bert)},
        "data": {"data_dir": str(data_dir), "train_file": str(corpus)},
        "training": {"output_dir": str(tmp_path / "run"), "batch_size": 8, "max_steps": 1, "progress": False},
    }
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(recipe), encoding="utf-8")
    args = ["train", "--config", str(tmp_path / "r.yaml")]
    for override in overrides:
        args += ["--set", override]
    return main(args)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("training.batch_size=0", "training.batch_size must be positive"),
        ("objective.temperature=0", "objective.temperature must be positive"),
        ("model.pooler=max", "model.pooler='max' is not valid; choose one of"),
        ("objective.name=nope", "unknown method 'nope'; valid: .*unsup_simcse"),
        ("eval.final_tasks=[nope]", "unknown evaluation task"),
    ],
)
def test_bad_settings_fail_before_work(
    tmp_path, tiny_bert, corpus_file, data_dir, capsys, override, message
) -> None:
    assert train_with(tmp_path, tiny_bert, corpus_file, data_dir, override) == 2
    assert re.search(message, capsys.readouterr().err)
    assert (
        not (tmp_path / "run" / "metrics.jsonl").exists()
        or "train" not in (tmp_path / "run" / "metrics.jsonl").read_text()
    )


def test_corpus_smaller_than_a_batch(tmp_path: Path, data_dir: Path, capsys) -> None:
    corpus = tmp_path / "small.txt"
    corpus.write_text("one\n\ntwo\nthree\n", encoding="utf-8")
    # the model path does not exist: the corpus check must come first, before any model is loaded
    assert train_with(tmp_path, tmp_path / "no-model", corpus, data_dir) == 2
    err = capsys.readouterr().err
    assert f"training file {corpus} has 3 examples, fewer than one batch (training.batch_size=8)" in err


def test_non_utf8_corpus_names_the_line(tmp_path: Path, tiny_bert: Path, data_dir: Path, capsys) -> None:
    corpus = tmp_path / "bad.txt"
    corpus.write_bytes(b"fine\nalso fine\n\xc3\x28 broken\n")
    assert train_with(tmp_path, tiny_bert, corpus, data_dir) == 2
    assert f"{corpus}:3: line is not valid UTF-8" in capsys.readouterr().err


def test_missing_data_dir_says_how_to_get_it(tmp_path: Path, capsys) -> None:
    assert main(["eval", "--model", "x", "--data-dir", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "nowhere") in err and "SENTCL_DATA" in err


def test_missing_data_file_names_it(tmp_path: Path, tiny_bert: Path, data_dir: Path, capsys) -> None:
    (tmp_path / "data").mkdir()
    assert (
        main(["train", "--set", f"model.name_or_path={tiny_bert}", "--data-dir", str(tmp_path / "data")]) == 2
    )
    assert f"missing data file {tmp_path / 'data' / 'corpora/wiki1m_prefix.txt'}" in capsys.readouterr().err


@pytest.mark.slow
def test_uncached_hub_id_offline_says_pass_a_local_path(tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    result = run(
        sys.executable,
        "-m",
        "sentcl.cli",
        "encode",
        "--model",
        "some-org/not-a-cached-model",
        "--input",
        str(ROOT / "README.md"),
        "--output",
        str(tmp_path / "e.npy"),
        env=env,
    )
    assert result.returncode == 2
    assert "could not load model 'some-org/not-a-cached-model'" in result.stderr
    assert "pass a local folder" in result.stderr


def test_eval_alignment_uniformity_and_anisotropy(tmp_path: Path, tiny_bert: Path, data_dir: Path) -> None:
    result = run_eval(tiny_bert, data_dir, tmp_path / "r.json", "align_uniform", "anisotropy")
    rows = stsb_rows(data_dir, "test")  # independent: the Wang & Isola formulas in numpy
    positives = [(r[5], r[6]) for r in rows if float(r[4]) > 4.0]
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    a = model.encode([p[0] for p in positives], normalize=True)
    b = model.encode([p[1] for p in positives], normalize=True)
    expected_alignment = float(np.mean(np.sum((a - b) ** 2, axis=1)))
    assert result["align_uniform"]["alignment"] == pytest.approx(expected_alignment, rel=1e-3)
    assert result["align_uniform"]["n_pos"] == len(positives)
    spectrum = result["anisotropy"]["spectrum"]
    assert spectrum[0] == pytest.approx(1.0) and all(
        x >= y for x, y in zip(spectrum, spectrum[1:], strict=False)
    )
    assert set(result["anisotropy"]["similarity_by_gold"]) == {"0-1", "1-2", "2-3", "3-4", "4-5"}


@pytest.mark.slow
def test_training_tracks_alignment_uniformity(
    tmp_path: Path, tiny_bert: Path, corpus_file: Path, data_dir: Path
) -> None:
    from sentcl.evaluation.alignment_uniformity import alignment_uniformity

    args = ["train", "--data-dir", str(data_dir), "--output-dir", str(tmp_path / "run")]
    for override in [
        f"model.name_or_path={tiny_bert}",
        f"data.train_file={corpus_file}",
        "training.batch_size=8",
        "training.max_steps=2",
        "training.eval_steps=1",
        "training.progress=false",
        "eval.final_tasks=[stsb_dev]",
        "eval.track_alignment_uniformity=true",
    ]:
        args += ["--set", override]
    assert main(args) == 0
    records = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    start = next(r for r in records if r["event"] == "geometry")
    evals = [r for r in records if r["event"] == "eval"]
    assert start["step"] == 0 and [r["step"] for r in evals] == [1, 2]
    assert all("alignment" in r and "uniformity" in r for r in evals)
    # step 0 is the start model, rebuilt here as the loop builds it (seed 42, then the encoder and its fresh head)
    from sentcl.config import ModelConfig
    from sentcl.modeling.build import build_encoder
    from sentcl.training.loop import _seed_everything

    _seed_everything(42)
    start_model = build_encoder(ModelConfig(name_or_path=str(tiny_bert)))
    expected = alignment_uniformity(lambda s: start_model.encode(s), data_dir, split="dev")
    assert start["alignment"] == pytest.approx(expected["alignment"], rel=1e-4)
    assert start["uniformity"] == pytest.approx(expected["uniformity"], rel=1e-4)


def test_train_help_lists_the_config_keys_only_when_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building the parser (every command line) does not walk the config's keys; ``train --help`` lists them."""
    import sentcl.cli.train as train_cli
    from sentcl.cli import build_parser

    calls: list[int] = []
    real = train_cli._config_keys_epilog
    monkeypatch.setattr(train_cli, "_config_keys_epilog", lambda: calls.append(1) or real())
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    train = sub.choices["train"]
    parser.parse_args(["train", "--config", "demo"])
    assert calls == []
    text = train.format_help()
    assert "config keys (YAML sections" in text and "training.batch_size" in text and calls == [1]
    assert train.format_help() == text and calls == [1]  # worked out once
