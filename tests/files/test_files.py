"""JSON, JSON Lines and YAML: the one reader each (errors name the file) and the strict, atomic JSON writer."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from sentcl.data.readers import DataFormatError
from sentcl.files.paths import ModelFolderError
from sentcl.files.read import iter_jsonl, json_safe, read_json, read_yaml, write_json_strict


def test_read_json_reads_and_names_the_file_in_every_error(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text('{"a": [1, 2.5, null]}', encoding="utf-8")
    assert read_json(good) == {"a": [1, 2.5, None]}
    (tmp_path / "list.json").write_text("[1]", encoding="utf-8")
    assert read_json(tmp_path / "list.json", list) == [1]
    with pytest.raises(FileNotFoundError, match=r"shard manifest .*nope\.json does not exist"):
        read_json(tmp_path / "nope.json", what="shard manifest")
    (tmp_path / "bad.json").write_text('{"a": 1,\n "b": }', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.json: index settings is not valid JSON \(line 2, column 7"):
        read_json(tmp_path / "bad.json", what="index settings")
    with pytest.raises(
        ModelFolderError, match=r"list\.json: the file must be a JSON object at the top level"
    ):
        read_json(tmp_path / "list.json", error=ModelFolderError)
    (tmp_path / "latin.json").write_bytes(b'{"a": "\xe9"}')
    with pytest.raises(ValueError, match=r"latin\.json: not UTF-8 text"):
        read_json(tmp_path / "latin.json")


def test_iter_jsonl_skips_blank_lines_and_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('"a"\n\n  \n"b"\n', encoding="utf-8")
    assert list(iter_jsonl(path, expect=str)) == [(1, "a"), (4, "b")]
    path.write_text('{"x": 1}\n[2]\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"t\.jsonl:2: expected a JSON object, got list"):
        list(iter_jsonl(path, error=DataFormatError))
    path.write_text('{"x": 1}\n{"x": \n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"t\.jsonl:2: not valid JSON"):
        list(iter_jsonl(path))


def test_write_json_strict_nulls_nan_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    payload = {"r": {"spearman": np.float32(0.5), "pearson": math.nan, "n": np.int64(3)}, "x": (math.inf, 1)}
    path = write_json_strict(tmp_path / "sub" / "results.json", payload)
    text = path.read_text(encoding="utf-8")
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text) == {"r": {"spearman": 0.5, "pearson": None, "n": 3}, "x": [None, 1]}
    assert json_safe({1: np.float64(2.0)}) == {"1": 2.0}
    assert [p.name for p in path.parent.iterdir()] == ["results.json"]


def test_read_yaml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("training:\n  batch_size: 8\n  learning_rate: 1.0e-5\n", encoding="utf-8")
    assert read_yaml(path, "config file") == {"training": {"batch_size": 8, "learning_rate": 1e-5}}
    for nothing in ("", "# all defaults\n"):  # no document: refused, never read as every default
        path.write_text(nothing, encoding="utf-8")
        with pytest.raises(ValueError, match=r"config file .*r\.yaml holds no settings"):
            read_yaml(path, "config file")
    path.write_text("training: [unclosed\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"grid file .*r\.yaml is not valid YAML"):
        read_yaml(path, "grid file", DataFormatError)
    with pytest.raises(ValueError, match=r"config file .*nope\.yaml does not exist"):
        read_yaml(tmp_path / "nope.yaml", "config file")


def test_a_relative_training_file_is_looked_up_in_the_working_folder_first_cf_relpath(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CF_relpath: data.train_file=./small.txt with small.txt in the working folder was looked up only in the
    data folder ('missing data file $DATA/small.txt'); the guide says the working folder comes first."""
    from helpers.data import write_small_sts

    from sentcl.config import TrainConfig, load_config
    from sentcl.training.validation import check_files

    data = write_small_sts(tmp_path / "data")
    (data / "small.txt").write_text("in the data folder\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    sets = [f"data.data_dir={data}", "data.train_file=./small.txt", "eval.final_tasks=[]"]
    cfg = load_config(TrainConfig, None, sets)
    assert check_files(cfg)[1].resolve() == (data / "small.txt").resolve()  # not here: the data folder's
    (work / "small.txt").write_text("in the working folder\n", encoding="utf-8")
    assert check_files(cfg)[1].resolve() == (work / "small.txt").resolve()  # here: the working folder's
