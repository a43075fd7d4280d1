"""Grid machinery: ``seeds`` (one run per point and seed, mean ± sd on the page) and
post-processing points (whitening / flow of the start model or of a trained point; no training).

The whitening point's number is checked against an independent computation: the start model's vectors,
whitened with the numpy formula, scored with scipy's Spearman on the STS-B dev pairs."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers.data import write_corpus, write_small_sts
from scipy.stats import spearmanr

import sentcl.experiments.grid as experiments
import sentcl.experiments.runs as experiment_runs
from sentcl.cli import main
from sentcl.config import ConfigError
from sentcl.experiments.grid import load_grid, point_configs
from sentcl.modeling import SentenceEncoder


def write_grid(tmp_path: Path, tiny_bert: Path, points: list | None = None) -> Path:
    data = write_small_sts(tmp_path / "data")
    write_corpus(data / "fit.txt", 80, seed=7)
    corpus = write_corpus(tmp_path / "corpus.txt", 40)
    base = {
        "model": {"name_or_path": str(tiny_bert), "pooler": "cls", "mlp_only_train": True},
        "data": {"data_dir": str(data), "train_file": str(corpus)},
        "training": {"batch_size": 8, "max_steps": 2, "eval_steps": 2, "save_steps": 0, "progress": False},
        "eval": {"final_tasks": ["stsb_dev"]},
    }
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base), encoding="utf-8")
    grid = {
        "title": "Tiny follow-ups",
        "base": str(tmp_path / "base.yaml"),
        "seeds": [1, 2],
        "points": points
        or [
            {"name": "SimCSE"},
            {
                "name": "whitening (start)",
                "set": {"model.pooler": "avg"},
                "postprocess": {"method": "whitening", "model": "start", "fit_file": "fit.txt", "dim": 16},
            },
            {
                "name": "flow (SimCSE)",
                "postprocess": {
                    "method": "flow",
                    "model": "SimCSE",
                    "fit_file": {"cpu": "fit.txt"},
                    "steps": 3,
                    "levels": 2,
                    "depth": 1,
                    "width": 8,
                },
            },
        ],
        "variants": {"cpu": {}},
        "paper": {"source": "made up", "values": {"whitening (start)": 66.28}},
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(grid), encoding="utf-8")
    return path


def whitened_stsb_dev(model: Path, data: Path) -> float:
    encoder = SentenceEncoder.from_pretrained(str(model), pooler="avg")
    x = encoder.encode((data / "fit.txt").read_text().splitlines()).astype(np.float64)
    mu = x.mean(axis=0)
    lam, u = np.linalg.eigh(np.cov(x, rowvar=False))
    w = (u[:, ::-1] / np.sqrt(lam[::-1]))[:, :16]  # (D, 16) = U Λ^(-1/2), first 16 columns
    rows = [
        line.split("\t") for line in (data / "senteval/STS/STSBenchmark/sts-dev.csv").read_text().splitlines()
    ]
    a = (encoder.encode([r[5] for r in rows]) - mu) @ w
    b = (encoder.encode([r[6] for r in rows]) - mu) @ w
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return 100 * spearmanr(cos, [float(r[4]) for r in rows]).statistic


def test_seeds_and_postprocess_points(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grid = write_grid(tmp_path, tiny_bert)
    runs, out = tmp_path / "runs", tmp_path / "out"
    args = ["experiment", str(grid), "--variant", "cpu", "--runs-dir", str(runs), "--output", str(out)]
    assert main(args) == 0
    values: dict[str, list[float]] = {}
    for slug in ("simcse", "whitening-start", "flow-simcse"):
        for seed in (1, 2):
            summary = json.loads((runs / "tiny/cpu" / slug / f"seed-{seed}" / "results.json").read_text())
            values.setdefault(slug, []).append(summary["results"]["stsb_dev"]["STSBenchmark"]["spearman"])
            config = json.loads((runs / "tiny/cpu" / slug / f"seed-{seed}" / "config.json").read_text())
            assert config["training"]["seed"] == seed
    flow = json.loads((runs / "tiny/cpu/flow-simcse/seed-2/results.json").read_text())
    assert flow["model"] == str(runs / "tiny/cpu/simcse/seed-2/best") and flow["postprocess"]["seed"] == 2
    assert values["simcse"][0] != values["simcse"][1]  # two seeds, two trainings
    assert values["whitening-start"][0] == pytest.approx(
        whitened_stsb_dev(tiny_bert, tmp_path / "data"), abs=1e-3
    )
    assert values["whitening-start"][0] == values["whitening-start"][1]  # whitening has no randomness

    lines = {
        line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
        for line in (out / "tiny-cpu.md").read_text().splitlines()
        if line.startswith("| ") and not line.startswith("| Point")
    }
    assert list(lines) == ["SimCSE", "whitening (start)", "flow (SimCSE)"]
    for name, slug in (("SimCSE", "simcse"), ("flow (SimCSE)", "flow-simcse")):
        mean, sd = statistics.fmean(values[slug]), statistics.stdev(values[slug])
        assert lines[name][2] == f"{mean:.2f} ± {sd:.2f}"
        assert lines[name][3] == f"1: {values[slug][0]:.2f}, 2: {values[slug][1]:.2f}"
    assert lines["whitening (start)"][4] == "66.28" and lines["SimCSE"][4] == "-"
    assert "whitening of start" in lines["whitening (start)"][1]

    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("a finished point ran again")

    monkeypatch.setattr(experiment_runs, "run_postprocess_point", refuse)
    monkeypatch.setattr("sentcl.training.loop.train", refuse)
    assert main(args) == 0  # every point x seed has results.json: nothing runs

    text = grid.read_text().replace("dim: 16", "dim: 8")
    grid.write_text(text)
    with pytest.raises(
        ConfigError, match=r"made with other settings \(postprocess.dim: 16 in the run, 8 now"
    ):
        experiment_runs.run_grid(load_grid(grid), "cpu", runs)


def test_only_takes_the_points_a_postprocessing_needs(tmp_path: Path, tiny_bert: Path) -> None:
    spec = experiments.select_points(load_grid(write_grid(tmp_path, tiny_bert)), ["flow (SimCSE)"])
    assert [p.name for p in spec.points] == ["SimCSE", "flow (SimCSE)"]
    assert len(point_configs(spec, "cpu", tmp_path)) == 4
    with pytest.raises(ConfigError, match=r"no point named 'nope'"):
        experiments.select_points(spec, ["nope"])


@pytest.mark.parametrize(
    ("point", "message"),
    [
        (
            {"method": "umap", "model": "start", "fit_file": "f"},
            "postprocess.method must be one of whitening, flow, pca, none",
        ),
        ({"method": "pca", "model": "start", "fit_file": "f"}, "postprocess.dim is required for pca"),
        (
            {"method": "flow", "model": "later", "fit_file": "f"},
            "the name of a training point listed before it",
        ),
        ({"method": "flow", "model": "start", "fit_file": "f", "stesp": 3}, "unknown key.*stesp"),
        ({"method": "flow", "model": "start", "fit_file": {"full": "f"}}, "names no file for variant 'cpu'"),
        ({"method": "flow", "model": "start"}, "postprocess needs 'fit_file'"),
    ],
)
def test_bad_postprocess_point_names_the_grid(
    tmp_path: Path, tiny_bert: Path, point: dict, message: str
) -> None:
    grid = write_grid(tmp_path, tiny_bert, [{"name": "p", "postprocess": point}, {"name": "later"}])
    with pytest.raises(ConfigError, match=message) as err:
        load_grid(grid)
    assert str(grid) in str(err.value)
