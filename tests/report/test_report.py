"""sentcl report: Markdown + PNGs of the documented size from real (tiny) runs, the trajectory, the cache."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from helpers.data import write_corpus, write_small_sts
from transformers import AutoModel, AutoTokenizer

import sentcl.report as report_pkg
import sentcl.report.collect as collect
from sentcl.cli import main
from sentcl.report import read_trajectory

FIGURES = ("alignment_uniformity.png", "trajectory.png", "spectrum.png", "similarity_by_gold.png")


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from the PNG signature and IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def small_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_small_sts(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory, tiny_bert: Path, small_data: Path) -> list[Path]:
    root = tmp_path_factory.mktemp("runs")
    corpus = write_corpus(root / "corpus.txt", 40)
    runs = []
    for seed in (1, 2):
        out = root / f"run{seed}"
        args = [
            "train",
            "--data-dir",
            str(small_data),
            "--output-dir",
            str(out),
            *("--set", f"model.name_or_path={tiny_bert}", "--set", f"data.train_file={corpus}"),
            *(
                "--set",
                "training.batch_size=8",
                "--set",
                "training.max_steps=2",
                "--set",
                f"training.seed={seed}",
            ),
            *(
                "--set",
                "training.eval_steps=1",
                "--set",
                "training.log_steps=1",
                "--set",
                "training.progress=false",
            ),
            *("--set", "eval.final_tasks=[stsb_dev]", "--set", "eval.track_alignment_uniformity=true"),
        ]
        assert main(args) == 0
        runs.append(out)
    return runs


def test_report_of_two_runs_writes_markdown_and_every_png(
    two_runs: list[Path], small_data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "report"
    args = ["report", *map(str, two_runs), "--output", str(out), "--data-dir", str(small_data)]
    assert main([*args, "--eval-tasks", "stsb_dev", "align_uniform", "anisotropy"]) == 0
    text = (out / "report.md").read_text(encoding="utf-8")
    for name in FIGURES:
        assert f"]({name})" in text
        assert png_size(out / name) == (640, 480), name
    for run in two_runs:
        summary = json.loads((run / "results.json").read_text(encoding="utf-8"))
        assert f"{summary['best_dev_score']:.2f} (stsb_dev)" in text
        assert f"{summary['results']['stsb_dev']['STSBenchmark']['spearman']:.2f}" in text
        cache = json.loads((run / "report_cache.json").read_text(encoding="utf-8"))
        assert set(cache["results"]) == {"align_uniform", "anisotropy"}
        au = cache["results"]["align_uniform"]
        assert f"| {run.name} | {au['alignment']:.4f} | {au['uniformity']:.4f} |" in text


def test_second_report_reads_the_cache_and_a_changed_model_is_evaluated_again(
    two_runs: list[Path], small_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = two_runs[0]
    base = ["report", str(run), "--data-dir", str(small_data), "--eval-tasks", "align_uniform"]
    assert main([*base, "--output", str(tmp_path / "a")]) == 0  # fills the cache if the other test did not
    calls: list[list[str]] = []

    def fake(
        model: str, tasks: list[str], data_dir: Path, batch_size: int = 128, pooler: str | None = None
    ) -> dict[str, Any]:
        calls.append(list(tasks))
        return {"align_uniform": {"alignment": 0.125, "uniformity": -2.5}}

    monkeypatch.setattr(collect, "compute_tasks", fake)
    assert main([*base, "--output", str(tmp_path / "b")]) == 0
    assert calls == []  # answered from report_cache.json
    weights = next((run / "best").glob("*.safetensors"))
    data = bytearray(weights.read_bytes())
    data[-4] ^= 1  # the lowest mantissa bit of the last weight: same size, other contents
    weights.write_bytes(bytes(data))
    assert main([*base, "--output", str(tmp_path / "b2")]) == 0
    assert calls == [["align_uniform"]]  # the model's content fingerprint changed: evaluated again
    calls.clear()
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a new mtime alone: same contents
    assert main([*base, "--output", str(tmp_path / "c")]) == 0
    assert calls == []  # answered from the cache: the contents did not change
    assert "| run1 | 0.1250 | -2.5000 |" in (tmp_path / "c" / "report.md").read_text(encoding="utf-8")


def test_trajectory_plot_gets_the_metrics_file_values(
    two_runs: list[Path], small_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}
    real = report_pkg.plot_trajectory
    monkeypatch.setattr(
        report_pkg, "plot_trajectory", lambda tracks, path: seen.update(tracks) or real(tracks, path)
    )
    args = ["report", str(two_runs[1]), "--output", str(tmp_path), "--data-dir", str(small_data)]
    assert main([*args, "--eval-tasks", "stsb_dev"]) == 0
    expected = []  # parsed here by hand: geometry at step 0, then every eval
    for line in (two_runs[1] / "metrics.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["event"] in ("geometry", "eval"):
            expected.append((record["step"], record["alignment"], record["uniformity"]))
    assert [r[0] for r in expected] == [0, 1, 2]
    got = [(p["step"], p["alignment"], p["uniformity"]) for p in seen["run2"]]
    assert got == expected
    assert png_size(tmp_path / "trajectory.png") == (640, 480)


def test_read_trajectory_hand_written_file_with_a_resume(tmp_path: Path) -> None:
    lines = [
        {"event": "data", "path": "x", "examples": 10},
        {"event": "geometry", "step": 0, "alignment": 0.5, "uniformity": -1.0},
        {"event": "train", "step": 10, "loss": 1.0},
        {"event": "eval", "step": 10, "stsb_dev": 70.0, "alignment": 0.4, "uniformity": -1.5, "best": True},
        {"event": "eval", "step": 20, "stsb_dev": 71.0, "alignment": 0.3, "uniformity": -1.8, "best": True},
        {"event": "eval", "step": 30, "stsb_dev": 72.0, "alignment": 0.9, "uniformity": -0.1, "best": True},
        {"event": "resume", "checkpoint": "checkpoint-20", "step": 20},
        {"event": "eval", "step": 30, "stsb_dev": 72.5, "alignment": 0.25, "uniformity": -2.0, "best": True},
        {"event": "eval", "step": 40, "stsb_dev": 72.0, "best": False},  # not tracked: no point
    ]
    path = tmp_path / "metrics.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in lines) + "\n", encoding="utf-8")
    assert read_trajectory(path) == [
        {"step": 0, "alignment": 0.5, "uniformity": -1.0},
        {"step": 10, "alignment": 0.4, "uniformity": -1.5},
        {"step": 20, "alignment": 0.3, "uniformity": -1.8},
        {"step": 30, "alignment": 0.25, "uniformity": -2.0},
    ]
    path.write_text(json.dumps(lines[0]) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"metrics\.jsonl:2: not valid JSON"):
        read_trajectory(path)


FIXED = {
    "sts": {
        **{t: {"all": 60.0 + i} for i, t in enumerate(("STS12", "STS13", "STS14", "STS15", "STS16"))},
        "STSBenchmark": {"spearman": 71.25},
        "SICKRelatedness": {"spearman": 68.5},
        "avg": 64.25,
    },
    "transfer_fast": {**{t: {"acc": 80.5} for t in ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC")}, "avg": 81.0}
    | {"MRPC": {"acc": 73.75, "f1": 81.5}},
    "align_uniform": {"alignment": 0.2345, "uniformity": -2.3456},
    "anisotropy": {
        "spectrum": [1.0, 0.5, 0.25, 0.125],
        "average_cosine": 0.4321,
        "similarity_by_gold": {f"{k}-{k + 1}": {"cosines": [0.1 * k, 0.1 * k + 0.05]} for k in range(5)},
    },
}


def test_model_folder_report_with_fixed_metrics(
    tiny_bert: Path, small_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        collect, "compute_tasks", lambda model, tasks, d, b=128, p=None: {t: FIXED[t] for t in tasks}
    )
    out = tmp_path / "r"
    assert main(["report", str(tiny_bert), "--output", str(out), "--data-dir", str(small_data)]) == 0
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "| STS12 | 60.00 |" in text and "| STS-B | 71.25 |" in text and "| Avg. | 64.25 |" in text
    assert "| 80.50 |" in text and "73.75" in text and "81.50" in text  # transfer table with MRPC F1
    assert "0.2345 | -2.3456 | 0.4321" in text
    assert "no training trajectory" in text.lower()
    assert not (out / "trajectory.png").exists()
    for name in ("alignment_uniformity.png", "spectrum.png", "similarity_by_gold.png"):
        assert png_size(out / name) == (640, 480)
    assert (out / "cache" / f"{tiny_bert.name}.json").is_file()


def test_pooler_option_evaluates_a_model_with_that_pooler(
    tiny_bert: Path, small_data: Path, tmp_path: Path
) -> None:
    """--pooler avg: alignment equals a hand-written masked mean of AutoModel's last layer (STS-B test, gold > 4)."""
    out = tmp_path / "r"
    args = ["report", str(tiny_bert), "--pooler", "avg", "--eval-tasks", "align_uniform"]
    assert main([*args, "--output", str(out), "--data-dir", str(small_data)]) == 0
    rows = [
        line.split("\t")
        for line in (small_data / "senteval/STS/STSBenchmark/sts-test.csv").read_text().splitlines()
    ]
    pairs = [(r[5], r[6]) for r in rows if float(r[4]) > 4.0]
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    model = AutoModel.from_pretrained(tiny_bert).eval()

    def mean_pooled(sentences: list[str]) -> np.ndarray:
        batch = tokenizer(sentences, padding=True, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**batch).last_hidden_state.numpy()  # (n, len, d)
        mask = batch["attention_mask"].numpy()[:, :, None]  # (n, len, 1)
        mean = (hidden * mask).sum(1) / mask.sum(1)
        return mean / np.linalg.norm(mean, axis=1, keepdims=True)

    x, y = mean_pooled([a for a, _ in pairs]), mean_pooled([b for _, b in pairs])
    alignment = float(np.mean(np.sum((x - y) ** 2, axis=1)))
    cache = json.loads((out / "cache" / f"{tiny_bert.name}__avg_.json").read_text(encoding="utf-8"))
    assert cache["results"]["align_uniform"]["alignment"] == pytest.approx(alignment, rel=1e-4)
    assert f"| {tiny_bert.name} (avg) | {alignment:.4f} |" in (out / "report.md").read_text(encoding="utf-8")


def test_report_of_a_missing_folder_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(tmp_path / "nope"), "--output", str(tmp_path / "r")]) == 2
    assert "nope: not a run folder" in capsys.readouterr().err


def test_cached_transfer_results_of_another_protocol_are_not_reused() -> None:
    from sentcl.report.collect import is_current

    old = {
        "MR": {"acc": 76.6, "dev_acc": 77.0, "n": 10662},
        "avg": 76.6,
    }  # written before protocols were named
    sklearn = {"MR": {"acc": 76.6, "protocol": "sklearn"}, "CR": {"acc": 82.0, "protocol": "sklearn"}}
    senteval = {"MR": {"acc": 75.1, "protocol": "senteval"}, "CR": {"acc": 82.1, "protocol": "senteval"}}
    sts = {"STS12": {"all": {"spearman": 72.4}}, "avg": 78.9}
    assert not is_current(old)
    assert not is_current(sklearn)
    assert is_current(senteval)
    assert is_current(sklearn, protocol="sklearn")
    assert is_current(sts) and is_current(78.9)
