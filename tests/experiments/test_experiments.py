"""sentcl experiment: a tiny 2-point grid (table = results.json numbers, resumable), errors, shipped grids."""

from __future__ import annotations

import json
import math
import re
import shutil
import struct
from pathlib import Path

import pytest
import yaml
from helpers.data import write_corpus, write_small_sts

import sentcl.training.loop as loop
from sentcl.cli import main
from sentcl.config import ConfigError, TrainConfig, load_config
from sentcl.experiments.grid import load_grid, point_configs, yaml_value

ROOT = Path(__file__).resolve().parents[2]
GRIDS = sorted((ROOT / "configs" / "experiments").glob("*.yaml"))


def write_tiny_grid(tmp_path: Path, tiny_bert: Path, vary: dict | None = None) -> Path:
    data = write_small_sts(tmp_path / "data")
    corpus = write_corpus(tmp_path / "corpus.txt", 40)
    base = {
        "model": {"name_or_path": str(tiny_bert), "pooler": "cls", "mlp_only_train": True},
        "data": {"data_dir": str(data), "train_file": str(corpus)},
        "training": {"batch_size": 8, "max_steps": 3, "eval_steps": 1, "save_steps": 0, "progress": False},
        "eval": {"final_tasks": ["stsb_dev"]},
    }
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base), encoding="utf-8")
    grid = {
        "title": "Tiny seed grid",
        "base": str(tmp_path / "base.yaml"),
        "metric": "stsb_dev",
        "vary": vary or {"training.seed": [1, 2]},
        "variants": {"cpu": {"training.max_steps": 2}, "full": {}},
        "paper": {"source": "made up", "values": {"1": 12.5}},
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(grid), encoding="utf-8")
    return path


def png_size(path: Path) -> tuple[int, int]:
    return struct.unpack(">II", path.read_bytes()[16:24])


def table_rows(md: Path) -> dict[str, list[str]]:
    rows = {}
    for line in md.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] not in ("Point",) and not set(cells[0]) <= {"-"}:
            rows[cells[0]] = cells
    return rows


def test_tiny_grid_table_resume_and_config_guard(
    tmp_path: Path, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grid = write_tiny_grid(tmp_path, tiny_bert)
    runs, out = tmp_path / "runs", tmp_path / "out"
    args = ["experiment", str(grid), "--variant", "cpu", "--runs-dir", str(runs), "--output", str(out)]
    assert main(args) == 0
    md = out / "tiny-cpu.md"
    rows = table_rows(md)
    assert list(rows) == ["1", "2"]
    for name in rows:
        summary = json.loads((runs / "tiny" / "cpu" / name / "results.json").read_text(encoding="utf-8"))
        assert summary["global_step"] == 2  # the variant's max_steps beat the base's 3
        assert rows[name][2] == f"{summary['results']['stsb_dev']['STSBenchmark']['spearman']:.2f}"
        assert rows[name][4] == str(summary["best_step"])
    assert rows["1"][2] != rows["2"][2]  # two different runs, each row its own number
    assert rows["1"][3] == "12.50" and rows["2"][3] == "-"  # paper column
    assert png_size(out / "tiny-cpu.png") == (640, 480)
    before = md.read_text(encoding="utf-8")

    calls: list[tuple[str, bool]] = []
    real_train = loop.train

    def counting_train(cfg: TrainConfig, resume: bool = False):  # noqa: ANN202
        calls.append((Path(cfg.training.output_dir).name, resume))
        return real_train(cfg, resume=resume)

    monkeypatch.setattr(loop, "train", counting_train)
    assert main(args) == 0  # finished points are not trained again
    assert calls == []
    assert md.read_text(encoding="utf-8") == before

    (runs / "tiny" / "cpu" / "2" / "results.json").unlink()  # interrupted after its last checkpoint
    assert main(args) == 0
    assert calls == [("2", True)]
    shutil.rmtree(runs / "tiny" / "cpu" / "2")  # interrupted before anything was saved
    assert main(args) == 0
    assert calls == [("2", True), ("2", False)]

    grid.write_text(
        grid.read_text(encoding="utf-8").replace("max_steps: 2", "max_steps: 1"), encoding="utf-8"
    )
    with pytest.raises(ConfigError, match=r"another config \(training\.max_steps: 2 in the run, 1 now"):
        from sentcl.experiments.runs import run_grid

        run_grid(load_grid(grid), "cpu", runs)


def test_unknown_key_in_vary_names_the_grid_file(
    tmp_path: Path, tiny_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = write_tiny_grid(tmp_path, tiny_bert, vary={"objective.temprature": [1]})
    with pytest.raises(ConfigError) as err:
        load_grid(grid)
    assert str(grid) in str(err.value) and "objective.temprature" in str(err.value)
    assert main(["experiment", str(grid), "--runs-dir", str(tmp_path / "r"), "--output", str(tmp_path)]) == 2
    assert str(grid) in capsys.readouterr().err
    grid = write_tiny_grid(tmp_path, tiny_bert, vary={"objective.name": ["unsup_simcse", "simcse"]})
    with pytest.raises(ConfigError, match=r"tiny\.yaml: point 'simcse', variant 'cpu': objective\.name"):
        load_grid(grid)


@pytest.mark.parametrize(
    "value", [0.0, 0.01, 1e-5, 3.0e-5, -0.6931471805599453, 1.0, 2, True, None, "unk", [1, "a"], "a: b"]
)
def test_yaml_value_round_trips(value: object) -> None:
    assert yaml.safe_load(yaml_value(value)) == value
    assert type(yaml.safe_load(yaml_value(value))) is type(value)


def test_shipped_grids_exist() -> None:
    names = {p.stem for p in GRIDS}
    assert {"dropout", "augmentation", "objectives", "pooling", "hard_negatives", "temperature"} <= names
    assert "cutoff_triplet" in names


@pytest.mark.parametrize("path", GRIDS, ids=lambda p: p.stem)
def test_shipped_grid_parses_and_every_point_is_a_valid_config(path: Path) -> None:
    spec = load_grid(path)  # builds every point x variant with load_config
    assert set(spec.variants) == {"cpu", "full"}
    for variant in ("cpu", "full"):
        for point, cfg in point_configs(spec, variant):
            expected = {}  # the last override of each key wins
            for text in [*spec.variants[variant], *point.overrides]:
                key, raw = text.split("=", 1)
                expected[key] = yaml.safe_load(raw)
            direct = load_config(
                TrainConfig, spec.base, [f"{k}={yaml_value(v)}" for k, v in expected.items()]
            )
            for key, value in expected.items():
                section, name = key.split(".")
                meta = type(getattr(cfg, section)).__dataclass_fields__[name].metadata
                if "parse" in meta:  # a field that reads its own value (model.teacher: mappings -> records)
                    value = meta["parse"](value, key)
                assert getattr(getattr(cfg, section), name) == value, (point.name, key)
                assert getattr(getattr(direct, section), name) == value, (point.name, key)
            if spec.name == "distillation":  # students of all-MiniLM-L6-v2 in both variants; the targets read
                # the seven-task average; a student of <= 3 of the 6 layers costs half a step or less
                assert cfg.model.name_or_path == "all-MiniLM-L6-v2"
                assert cfg.eval.final_tasks == ["sts", "stsb_dev"]
                layers = cfg.model.student_layers
                assert (
                    variant != "cpu"
                    or point.postprocess is not None
                    or (layers is not None and len(layers) <= 3 and cfg.training.max_steps <= 400)
                )
            elif variant == "cpu":  # sized for the 2-core machine, from the offline encoder
                assert cfg.model.name_or_path == "all-MiniLM-L6-v2"
                assert cfg.training.max_steps is not None and cfg.training.max_steps <= 80
                assert cfg.eval.final_tasks == ["stsb_dev"]
            else:
                assert cfg.model.name_or_path == "bert-base-uncased" and cfg.training.max_steps is None


def test_paper_numbers_of_table_3_and_alpha() -> None:
    """SimCSE Table 3 (STS-B dev, BERT-base) as printed in the paper; Table 7's alpha = e^w."""
    spec = load_grid(ROOT / "configs" / "experiments" / "dropout.yaml")
    assert spec.paper == {
        "0.0": 71.1, "0.01": 72.6, "0.05": 81.1, "0.1": 82.5, "0.15": 81.4, "0.2": 80.5, "0.5": 71.0,
        "fixed 0.1": 43.6,
    }  # fmt: skip
    fixed = dict(point_configs(spec, "cpu"))
    fixed_cfg = next(cfg for point, cfg in fixed.items() if point.name == "fixed 0.1")
    assert fixed_cfg.model.same_dropout_mask and fixed_cfg.model.dropout == 0.1
    hard = load_grid(ROOT / "configs" / "experiments" / "hard_negatives.yaml")
    alphas = {
        p.name: math.exp(c.objective.hard_negative_weight)
        for p, c in point_configs(hard, "cpu")
        if c.objective.name == "sup_simcse"
    }
    assert alphas == pytest.approx({"alpha = 0.5": 0.5, "alpha = 1": 1.0, "alpha = 2": 2.0})
    mlm = load_grid(ROOT / "configs" / "experiments" / "augmentation.yaml")
    assert "MLM 15%" not in [p.name for p in mlm.points_for("cpu")]
    assert "MLM 15%" in [p.name for p in mlm.points_for("full")]
    assert re.fullmatch(r"[a-z0-9.-]+", "-".join(p.slug for p in mlm.points))


def test_config_guard_reads_keys_added_after_the_run_as_their_defaults(tmp_path: Path) -> None:
    """A run made before a setting existed has no such key in config.json: equal to a config that leaves
    the setting at its default, different from one that sets it."""
    from sentcl.config import to_dict
    from sentcl.experiments.runs import config_differences

    saved = to_dict(TrainConfig())
    del saved["training"]["gradient_cache_chunk"]
    (tmp_path / "config.json").write_text(json.dumps(saved), encoding="utf-8")
    assert config_differences(tmp_path, TrainConfig()) == []
    changed = load_config(TrainConfig, None, ["training.gradient_cache_chunk=16"])
    assert config_differences(tmp_path, changed) == ["training.gradient_cache_chunk: 0 in the run, 16 now"]


def test_paper_numbers_of_another_metric_stay_in_the_table_and_off_the_plot(tmp_path: Path) -> None:
    """followups and cutoff_triplet quote the papers' 7-task averages beside STS-B dev: one axis cannot hold
    both, so their plots show STS-B dev only and the page says so; a grid on the paper's own metric keeps
    the paper's bars."""
    assert load_grid(ROOT / "configs" / "experiments" / "followups.yaml").paper_metric == "sts_avg"
    assert load_grid(ROOT / "configs" / "experiments" / "dropout.yaml").paper_metric is None
    followups = (ROOT / "docs" / "results" / "followups-cpu.md").read_text(encoding="utf-8")
    assert "The plot shows STS-B dev only: the paper's numbers are STS avg. (7 tasks)." in followups
    for page in (ROOT / "docs" / "results").glob("*-cpu.md"):
        assert "(Plot:" not in page.read_text(encoding="utf-8"), page.name
    grid = tmp_path / "grid.yaml"
    text = (ROOT / "configs" / "experiments" / "dropout.yaml").read_text(encoding="utf-8")
    grid.write_text(text.replace("\npaper:\n", "\npaper:\n  metric: nope\n", 1), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"grid\.yaml: paper\.metric 'nope' is not valid"):
        load_grid(grid)
