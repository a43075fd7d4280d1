"""Distillation runs on the tiny BERT: the teacher encodes the corpus once (not per epoch, not per run), the
student -> teacher projection is trained and kept in the checkpoint (not the model), and a resumed run
equals the uninterrupted one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
import yaml
from helpers.data import tiny_recipe, write_corpus, write_small_sts
from safetensors.torch import load_file

from sentcl.cli import main
from sentcl.methods import teacher_cache


@pytest.fixture()
def encoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of sentences each opened teacher encoded."""
    counts: list[int] = []
    real = teacher_cache.open_teacher

    def counting(teacher, device=None):  # noqa: ANN001, ANN202
        encoder = real(teacher, device)
        counts.append(0)
        encode = encoder.encode

        def counted(sentences, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            counts[-1] += len(sentences)
            return encode(sentences, *args, **kwargs)

        encoder.encode = counted
        return encoder

    monkeypatch.setattr(teacher_cache, "open_teacher", counting)
    return counts


def write(
    tmp_path: Path, tiny_bert: Path, name: str, run: str, options: dict | None = None, **training: object
) -> Path:
    corpus = tmp_path / "corpus.txt"
    if not corpus.exists():
        write_corpus(corpus, 16)
        corpus.write_text(corpus.read_text() + corpus.read_text().splitlines()[0] + "\n")  # a repeated line
    recipe = tiny_recipe(tiny_bert, write_small_sts(tmp_path / "data"), corpus, tmp_path / run, **training)
    recipe["model"].update(teacher="all-MiniLM-L6-v2", teacher_cache=str(tmp_path / "cache"))
    recipe["objective"] = {"name": name, **(options or {})}
    path = tmp_path / f"{run}.yaml"
    path.write_text(yaml.safe_dump(recipe), encoding="utf-8")
    return path


def test_two_epochs_and_a_second_run_encode_nothing_more(
    tmp_path: Path, tiny_bert: Path, encoded: list[int]
) -> None:
    recipe = write(tmp_path, tiny_bert, "distill_kl", "first", max_steps=None, epochs=2)
    assert main(["train", "--config", str(recipe)]) == 0
    assert encoded == [16], "16 distinct sentences of 17 lines, encoded once for both epochs"
    steps = [json.loads(x) for x in (tmp_path / "first" / "metrics.jsonl").read_text().splitlines()]
    assert max(r["step"] for r in steps if r["event"] == "train") == 6  # 2 epochs of 3 batches
    second = write(tmp_path, tiny_bert, "distill_mse", "second", {"simcse_weight": 0.1})
    assert main(["train", "--config", str(second)]) == 0
    assert encoded == [16], "the second run (another method, same teacher and corpus) reused the cache"
    steps = [json.loads(x) for x in (tmp_path / "second" / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in steps if r["event"] == "train"]
    assert train and all(abs(r["loss"] - r["mse_source"] - 0.1 * r["simcse"]) < 1e-5 for r in train)


def test_the_projection_is_trained_resumed_exactly_and_not_saved_in_the_model(
    tmp_path: Path, tiny_bert: Path, encoded: list[int]
) -> None:
    full = write(tmp_path, tiny_bert, "distill_mse", "full", epochs=2)  # 3 batches an epoch, 4 steps
    assert main(["train", "--config", str(full)]) == 0
    state = torch.load(tmp_path / "full" / "checkpoint-4" / "training_state.pt", weights_only=True)
    projection = {k: v for k, v in state["model"].items() if k.startswith("teacher_projection.")}
    assert projection["teacher_projection.weight"].shape == (384, 32)  # student 32 -> teacher 384
    start = torch.load(tmp_path / "full" / "checkpoint-2" / "training_state.pt", weights_only=True)["model"]
    assert not torch.equal(start["teacher_projection.weight"], projection["teacher_projection.weight"])
    saved = load_file(str(tmp_path / "full" / "best" / "model.safetensors"))
    assert not any("projection" in k for k in saved), "the projection is not part of the model"

    shutil.copytree(tmp_path / "full", tmp_path / "part")
    shutil.rmtree(tmp_path / "part" / "checkpoint-4")  # as if the job died after step 2's checkpoint
    resumed = write(tmp_path, tiny_bert, "distill_mse", "part", epochs=2)
    assert main(["train", "--config", str(resumed), "--resume"]) == 0
    again = torch.load(tmp_path / "part" / "checkpoint-4" / "training_state.pt", weights_only=True)["model"]
    for key, value in state["model"].items():
        torch.testing.assert_close(again[key], value, rtol=0, atol=1e-6, msg=key)
    assert encoded == [16], "three runs, one encode"


def test_parallel_sentences_train_both_terms_and_the_teacher_encodes_the_sources_only(
    tmp_path: Path, tiny_bert: Path, encoded: list[int]
) -> None:
    pairs = tmp_path / "parallel.tsv"
    rows = [
        (f"the dog runs {w}", f"der hund rennt {w}") for w in ("fast", "slow", "near", "far", "home", "out")
    ]
    pairs.write_text("sent0\tsent1\n" + "".join(f"{a}\t{b}\n" for a, b in rows + rows[:2]), encoding="utf-8")
    recipe = write(tmp_path, tiny_bert, "distill_mse", "pairs", max_steps=2)
    cfg = yaml.safe_load(recipe.read_text())
    cfg["data"].update(train_file=str(pairs), reader="pairs")
    cfg["training"]["batch_size"] = 4
    recipe.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    assert main(["train", "--config", str(recipe)]) == 0
    assert encoded == [6], "the six distinct source sentences, not the translations"
    steps = [json.loads(x) for x in (tmp_path / "pairs" / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in steps if r["event"] == "train"]
    assert len(train) == 2
    assert all(abs(r["loss"] - r["mse_source"] - r["mse_translation"]) < 1e-5 for r in train)


def test_a_file_mixing_sentences_and_pairs_is_refused() -> None:
    from sentcl.config import ConfigError
    from sentcl.data.readers import Corpus
    from sentcl.methods.distill_mse.build import corpus_views

    assert corpus_views(Corpus(Path("a"), ["x", "y"], {}), "distill_mse") == 1
    assert corpus_views(Corpus(Path("a"), [("x", "y")], {}), "distill_mse") == 2
    with pytest.raises(ConfigError, match="example 1 of a"):
        corpus_views(Corpus(Path("a"), ["x", ("x", "y")], {}), "distill_mse")
