"""The training loop's scale options against the plain loop: GradCache, streaming corpora, fused AdamW.

Each option must change how a step is computed, never what it computes: the reference is the same recipe
trained without the option (losses from metrics.jsonl, weights from the last checkpoint).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file

from sentcl.cli import main

STEPS = 3


def write_recipe(
    folder: Path, tiny_bert: Path, corpus: Path, data_dir: Path, model: dict | None = None, **sections: dict
) -> Path:
    recipe = {
        "model": {"name_or_path": str(tiny_bert), "pooler": "cls", "max_length": 16, **(model or {})},
        "data": {"data_dir": str(data_dir), "train_file": str(corpus), **sections.get("data", {})},
        "objective": {"name": "unsup_simcse", **sections.get("objective", {})},
        "training": {
            "output_dir": str(folder / "run"),
            "batch_size": 8,
            "max_steps": STEPS,
            "eval_steps": 0,
            "save_steps": 0,
            "log_steps": 1,
            "progress": False,
            "learning_rate": 1e-3,
            **sections.get("training", {}),
        },
        "eval": {"final_tasks": ["stsb_dev"], "batch_size": 64},
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe), encoding="utf-8")
    return path


def run(recipe: Path) -> tuple[list[float], dict[str, torch.Tensor]]:
    """Train; the per-step losses and the final weights."""
    assert main(["train", "--config", str(recipe)]) == 0
    out = recipe.parent / "run"
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in records if r["event"] == "train"]
    assert len(losses) == STEPS
    return losses, load_file(str(out / f"checkpoint-{STEPS}" / "model" / "model.safetensors"))


def assert_same_run(
    got: tuple[list[float], dict[str, torch.Tensor]],
    expected: tuple[list[float], dict[str, torch.Tensor]],
    atol: float,
    weight_atol: float | None = None,
) -> None:
    torch.testing.assert_close(torch.tensor(got[0]), torch.tensor(expected[0]), rtol=0, atol=atol)
    assert got[1].keys() == expected[1].keys()
    for key, value in expected[1].items():
        diff = float((got[1][key] - value).abs().max())
        assert diff <= (weight_atol or atol), f"{key}: weights differ by {diff:.2e}"


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    from conftest import write_corpus

    return write_corpus(tmp_path / "corpus.txt", 40)


def test_gradient_cache_trains_like_the_plain_loop(
    tmp_path: Path, tiny_bert: Path, corpus: Path, data_dir: Path
) -> None:
    """Dropout off: one forward over the whole batch and GradCache's chunks of 3 (3 + 3 + 2 sentences)
    compute the same loss and gradients, so the runs agree step by step."""
    no_dropout = {"dropout": 0.0}
    plain = run(write_recipe(tmp_path / "plain", tiny_bert, corpus, data_dir, no_dropout))
    cached = run(
        write_recipe(
            tmp_path / "gc",
            tiny_bert,
            corpus,
            data_dir,
            no_dropout,
            training={"gradient_cache_chunk": 3},
        )
    )
    # Adam divides by sqrt(v): where a gradient is ~1e-7 its float rounding can turn an update of up to
    # lr = 1e-3; a wrong gradient moves most weights by that much, rounding a handful by < 1e-4
    assert_same_run(cached, plain, atol=1e-5, weight_atol=2e-4)
    assert plain[0][0] != plain[0][-1], "the weights moved, so later losses test the update too"


def test_gradient_cache_with_dropout_trains(
    tmp_path: Path, tiny_bert: Path, corpus: Path, data_dir: Path
) -> None:
    """With dropout the chunks draw other masks than one big forward: the run differs but trains."""
    plain = run(write_recipe(tmp_path / "plain", tiny_bert, corpus, data_dir))
    cached = run(
        write_recipe(tmp_path / "gc", tiny_bert, corpus, data_dir, training={"gradient_cache_chunk": 4})
    )
    assert all(torch.isfinite(torch.tensor(cached[0])))
    assert cached[0] != plain[0]


def test_streaming_corpus_trains_like_the_in_memory_reader(
    tmp_path: Path, tiny_bert: Path, corpus: Path, data_dir: Path
) -> None:
    """Same batches, same dropout: the streamed, cache-collated run equals the in-memory one; the token
    cache is built on the first run and reused by the second."""
    memory = run(write_recipe(tmp_path / "memory", tiny_bert, corpus, data_dir))
    cache = tmp_path / "cache"
    streaming = {"streaming": True, "cache_dir": str(cache)}
    streamed = run(write_recipe(tmp_path / "stream", tiny_bert, corpus, data_dir, data=streaming))
    assert_same_run(streamed, memory, atol=1e-6)
    token_folders = list((cache / "streaming").glob("tokens-*"))
    assert len(token_folders) == 1
    stamp = {p: p.stat().st_mtime_ns for p in token_folders[0].rglob("*")}
    again = run(write_recipe(tmp_path / "again", tiny_bert, corpus, data_dir, data=streaming))
    assert_same_run(again, memory, atol=1e-6)
    assert {p: p.stat().st_mtime_ns for p in token_folders[0].rglob("*")} == stamp, (
        "cache reused, not rebuilt"
    )


def test_streaming_with_a_text_augmentation_tokenises_the_views(
    tmp_path: Path, tiny_bert: Path, corpus: Path, data_dir: Path
) -> None:
    """Crop changes the positive's text, so the loop tokenises the views as the in-memory run does."""
    crop = {"augmentation": "crop", "augmentation_rate": 0.3}
    memory = run(write_recipe(tmp_path / "memory", tiny_bert, corpus, data_dir, data=crop))
    streaming = {**crop, "streaming": True, "cache_dir": str(tmp_path / "cache")}
    streamed = run(write_recipe(tmp_path / "stream", tiny_bert, corpus, data_dir, data=streaming))
    assert_same_run(streamed, memory, atol=1e-6)
    assert not list((tmp_path / "cache" / "streaming").glob("tokens-*")), "no token cache for text views"


def test_fused_adamw_matches_adamw(tmp_path: Path, tiny_bert: Path, corpus: Path, data_dir: Path) -> None:
    plain = run(write_recipe(tmp_path / "plain", tiny_bert, corpus, data_dir))
    fused = run(
        write_recipe(tmp_path / "fused", tiny_bert, corpus, data_dir, training={"fused_optimizer": True})
    )
    assert_same_run(fused, plain, atol=1e-5)


@pytest.mark.parametrize(
    ("sections", "message"),
    [
        (
            {"objective": {"name": "sup_simcse"}, "data": {"streaming": True}},
            "data.streaming reads plain text files",
        ),
        (
            {"objective": {"mlm_weight": 0.1}, "training": {"gradient_cache_chunk": 4}},
            "gradient_cache_chunk cannot be combined with objective.mlm_weight",
        ),
        ({"training": {"gradient_cache_chunk": -1}}, "training.gradient_cache_chunk must be >= 0"),
    ],
)
def test_bad_combinations_are_clear_errors(
    tmp_path: Path, tiny_bert: Path, corpus: Path, data_dir: Path, capsys, sections: dict, message: str
) -> None:
    assert (
        main(["train", "--config", str(write_recipe(tmp_path, tiny_bert, corpus, data_dir, **sections))]) == 2
    )
    assert message in capsys.readouterr().err
