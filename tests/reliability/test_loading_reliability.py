"""Model loading on the inference side, with damaged parts and lengths, through the real CLI.

Every row copies a good saved sentcl folder (the tiny random BERT with pooler cls and its MLP head), breaks
one part of it, and runs ``sentcl encode``/``eval``/``search`` on it in-process: one clear error line that
names the file (or tensor) and the problem, no traceback.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from harness import Case, parametrize, run_case
from helpers.data import write_corpus
from transformers import BertModel

from sentcl.modeling.encoder import SentenceEncoder

ENV: dict[str, Path] = {}


@pytest.fixture(scope="module", autouse=True)
def good_model(tmp_path_factory: pytest.TempPathFactory, tiny_bert: Path, data_dir: Path) -> Path:
    folder = tmp_path_factory.mktemp("good") / "model"
    SentenceEncoder.from_pretrained(str(tiny_bert), pooler="cls").save_pretrained(folder)
    ENV.update(model=folder, tiny=tiny_bert, data=data_dir)
    return folder


def broken(change: Callable[[Path], None]) -> Callable[[Path], Path]:
    """A copy of the good folder in the case folder, with ``change`` applied to it."""

    def make(folder: Path) -> Path:
        model = folder / "model"
        shutil.copytree(ENV["model"], model)
        change(model)
        return model

    return make


def edit_json(**changes: object) -> Callable[[Path], None]:
    def change(model: Path) -> None:
        meta = json.loads((model / "sentcl.json").read_text())
        (model / "sentcl.json").write_text(json.dumps({**meta, **changes}))

    return change


def write_text(name: str, text: str) -> Callable[[Path], None]:
    return lambda model: (model / name).write_text(text)


def truncate_json(model: Path) -> None:
    text = (model / "sentcl.json").read_text()
    (model / "sentcl.json").write_text(text[: len(text) // 2])


def remove(*names: str) -> Callable[[Path], None]:
    def change(model: Path) -> None:
        for name in names:
            (model / name).unlink(missing_ok=True)

    return change


def set_weight(value: float, pick: Callable[[SentenceEncoder], torch.Tensor]) -> Callable[[Path], None]:
    def change(model: Path) -> None:
        encoder = SentenceEncoder.from_pretrained(str(model))
        with torch.no_grad():
            pick(encoder).fill_(value)
        encoder.save_pretrained(model)

    return change


def plain_without_pooler(model: Path) -> None:
    """A plain HF folder (no sentcl.json) whose BertModel has no pooler (add_pooling_layer=False)."""
    encoder = SentenceEncoder.from_pretrained(str(model))
    shutil.rmtree(model)
    BertModel(encoder.backbone.config, add_pooling_layer=False).save_pretrained(model)
    encoder.tokenizer.save_pretrained(model)


NAN_IN_LAYER = set_weight(float("nan"), lambda e: e.backbone.encoder.layer[1].output.dense.bias)
# finite weights (3e38 < float32 max) whose sum overflows: LayerNorm of the embeddings gives NaN
HUGE_EMBEDDINGS = set_weight(3e38, lambda e: e.backbone.embeddings.word_embeddings.weight)


def encode(change: Callable[[Path], None], *extra: str) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        model = broken(change)(folder)
        (folder / "in.txt").write_text("a man plays a guitar\nthe dog runs\n")
        return [
            "encode",
            "--model",
            str(model),
            "--input",
            str(folder / "in.txt"),
            "--output",
            str(folder / "out.npy"),
            *extra,
        ]

    return setup


def evaluate(change: Callable[[Path], None]) -> Callable[[Path], list[str]]:
    return lambda folder: ["eval", "--model", str(broken(change)(folder)), "--data-dir", str(ENV["data"])]


def search(change: Callable[[Path], None]) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        corpus = write_corpus(folder / "corpus.txt", 8)
        return ["search", "--model", str(broken(change)(folder)), "--corpus", str(corpus), "--query", "a dog"]

    return setup


def train_max_length(folder: Path) -> list[str]:
    corpus = write_corpus(folder / "corpus.txt", 16)
    recipe = {
        "model": {"name_or_path": str(ENV["tiny"]), "pooler": "cls", "max_length": 100},
        "data": {"data_dir": str(ENV["data"]), "train_file": str(corpus)},
        "training": {"output_dir": str(folder / "run"), "batch_size": 4, "max_steps": 2},
    }
    (folder / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    return ["train", "--config", str(folder / "recipe.yaml")]


def no_output(folder: Path, printed: str) -> None:
    assert not (folder / "out.npy").exists(), "nothing is written for a refused model"


def nothing_trained(folder: Path, printed: str) -> None:
    assert not list((folder / "run").glob("checkpoint-*")) if (folder / "run").exists() else True


CASES = [
    # 10.6: missing or bad parts
    Case("head_missing", encode(remove("sentcl_head.safetensors")),
         r"sentcl_head\.safetensors: missing; .*sentcl\.json says pooler 'cls'", check=no_output),
    Case("tokenizer_missing", encode(remove("vocab.txt", "tokenizer.json")),
         r"model: no tokenizer files \(none of tokenizer\.json, vocab\.txt", check=no_output),
    Case("mlp_only_train_string", encode(edit_json(mlp_only_train="no")),
         r"sentcl\.json: 'mlp_only_train' must be true or false, got 'no'", check=no_output),
    Case("pooler_unknown", encode(edit_json(pooler="max")), r"sentcl\.json: 'pooler' must be one of cls, "),
    Case("sentcl_json_truncated", encode(truncate_json), r"sentcl\.json: not valid JSON \(line \d+, column \d+: "),
    Case("sentcl_json_list", encode(write_text("sentcl.json", "[1, 2]")),
         r"sentcl\.json: the file must be a JSON object at the top level, got list"),
    Case("modules_json_garbage", encode(lambda m: (remove("sentcl.json")(m), write_text("modules.json", "{oops")(m))),
         r"modules\.json: not valid JSON \(line 1, column 2"),
    Case("plain_folder_without_pooler_cls", encode(plain_without_pooler),
         r"pooler 'cls' needs a trained MLP head .* use a pooler that needs no head: cls_before_pooler, avg"),
    # 10.1, inference side: non-finite weights (named at load) and outputs
    Case("nan_weight_encode", encode(NAN_IN_LAYER),
         r"weight encoder\.layer\.1\.output\.dense\.bias has 32 non-finite values", check=no_output),
    Case("nan_weight_eval", evaluate(NAN_IN_LAYER), r"weight encoder\.layer\.1\.output\.dense\.bias has 32 non-finite"),
    Case("nan_weight_search", search(NAN_IN_LAYER), r"weight encoder\.layer\.1\.output\.dense\.bias has 32 non-finite"),
    Case("nonfinite_outputs_encode", encode(HUGE_EMBEDDINGS),
         r"non-finite embeddings \(NaN or inf\) for 2 of 2 sentences, the first being sentence 1", check=no_output),
    Case("nonfinite_outputs_search", search(HUGE_EMBEDDINGS), r"non-finite embeddings \(NaN or inf\)"),
    # 10.7, length part
    Case("encode_max_length_above_limit", encode(lambda m: None, "--max-length", "100"),
         r"max_length must be between 1 and the model's position limit 64, got 100", check=no_output),
    Case("saved_max_length_above_limit", encode(edit_json(max_length=100)),
         r"max_length=100 is above the position limit of model .* \(64 tokens, from its config\.json"),
    Case("train_max_length_above_limit", train_max_length,
         r"max_length=100 is above the position limit .* use at most 64", check=nothing_trained),
]  # fmt: skip


@parametrize(CASES)
def test_loading_case(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_case(case, tmp_path, capsys)


def test_the_good_folder_still_encodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The table's base folder is fine: the errors come from the breakage alone."""
    ok = Case("good", encode(lambda m: None), None)
    run_case(ok, tmp_path, capsys)
    assert np.isfinite(np.load(tmp_path / "out.npy")).all()
