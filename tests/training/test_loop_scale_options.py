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
    """conftest's tiny recipe for STEPS steps, no dev evaluation, one checkpoint at the end; ``model`` and
    ``sections`` (data=, objective=, training=) are merged into its sections."""
    from helpers.data import tiny_recipe

    training = {"max_steps": STEPS, "eval_steps": 0, "save_steps": 0, **sections.get("training", {})}
    recipe = tiny_recipe(tiny_bert, data_dir, corpus, folder / "run", **training)
    for name, extra in (
        ("model", model),
        ("data", sections.get("data")),
        ("objective", sections.get("objective")),
    ):
        recipe[name].update(extra or {})
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
    from helpers.data import write_corpus

    return write_corpus(tmp_path / "corpus.txt", 40)


def plain_and_cached(
    tmp_path: Path, tiny_bert: Path, corpus: Path, data_dir: Path, objective: dict | None = None
) -> tuple[tuple[list[float], dict[str, torch.Tensor]], tuple[list[float], dict[str, torch.Tensor]]]:
    """The same recipe, dropout off, trained plainly and with GradCache chunks of 3 (3 + 3 + 2 sentences), both
    on one thread: the comparison is of the algorithm, and a multi-threaded matmul's other summation order
    turns Adam's division by sqrt(v) of ~1e-7 gradients into 4e-4 weight differences on a 2-core machine."""
    no_dropout, sections = {"dropout": 0.0}, {"objective": objective or {}}
    one_thread = {"num_threads": 1}
    plain = run(
        write_recipe(
            tmp_path / "plain", tiny_bert, corpus, data_dir, no_dropout, training=one_thread, **sections
        )
    )
    cached = run(
        write_recipe(
            tmp_path / "gc",
            tiny_bert,
            corpus,
            data_dir,
            no_dropout,
            training={"gradient_cache_chunk": 3, **one_thread},
            **sections,
        )
    )
    return plain, cached


def test_gradient_cache_trains_like_the_plain_loop(
    tmp_path: Path, tiny_bert: Path, corpus: Path, data_dir: Path
) -> None:
    """Dropout off: one forward over the whole batch and GradCache's chunks of 3 (3 + 3 + 2 sentences)
    compute the same loss and gradients, so the runs agree step by step."""
    plain, cached = plain_and_cached(tmp_path, tiny_bert, corpus, data_dir)
    # Adam divides by sqrt(v): where a gradient is ~1e-7 its float rounding can turn an update of up to
    # lr = 1e-3; a wrong gradient moves most weights by that much, rounding a handful by < 1e-4
    assert_same_run(cached, plain, atol=1e-5, weight_atol=2e-4)
    assert plain[0][0] != plain[0][-1], "the weights moved, so later losses test the update too"


def reference_first_step(tiny_bert: Path, corpus: Path, chunk: int) -> tuple[float, dict[str, torch.Tensor]]:
    """Step 1 written out by hand: the loop's seeds (42 for the head, 42 again before the first step), the
    first 8 sentences of epoch 0's permutation, each chunk of ``chunk`` sentences encoded WITH a graph in
    order (so each draws its own dropout masks), InfoNCE at tau = 0.05, clipping at 1.0 and one torch AdamW
    step at lr 1e-3. Returns the loss and the backbone's weights after the step."""
    from sentcl.config import ModelConfig
    from sentcl.modeling.build import build_encoder

    torch.manual_seed(42)
    model = build_encoder(ModelConfig(name_or_path=str(tiny_bert), pooler="cls", max_length=16))
    model.train()
    lines = [line for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    order = torch.randperm(len(lines), generator=torch.Generator().manual_seed(42 * 1_000_003)).tolist()
    sentences = [lines[i] for i in order[:8]]
    torch.manual_seed(42)
    parts = []
    for start in range(0, len(sentences), chunk):
        rows = [s for s in sentences[start : start + chunk] for _ in range(2)]  # (s, s) per example
        tokens = model.tokenizer(rows, padding=True, truncation=True, max_length=16, return_tensors="pt")
        parts.append(model(**tokens).view(-1, 2, model.embedding_dim))  # (b, 2, D)
    z = torch.cat(parts)  # (8, 2, D)
    a, b = torch.nn.functional.normalize(z[:, 0], dim=-1), torch.nn.functional.normalize(z[:, 1], dim=-1)
    loss = torch.nn.functional.cross_entropy(a @ b.T / 0.05, torch.arange(len(z)))  # (8, 8) logits
    loss.backward()
    params = [p for p in model.parameters() if p.requires_grad]
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    optimizer = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.0)
    optimizer.step()
    return float(loss.detach()), {k: v.detach().clone() for k, v in model.backbone.state_dict().items()}


def test_gradient_cache_with_dropout_equals_a_hand_written_chunked_step(
    tmp_path: Path, tiny_bert: Path, corpus: Path, data_dir: Path
) -> None:
    """With dropout each chunk draws its own masks, in order: GradCache's first step must equal the
    hand-written step that encodes the same chunks with a graph (its re-runs replay the no-grad pass'
    masks), and differ from the plain step's one forward over the whole batch."""

    def first_step(name: str, training: dict) -> tuple[float, dict[str, torch.Tensor]]:
        recipe = write_recipe(
            tmp_path / name, tiny_bert, corpus, data_dir, training={"max_steps": 1, **training}
        )
        assert main(["train", "--config", str(recipe)]) == 0
        out = tmp_path / name / "run"
        records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
        (loss,) = [r["loss"] for r in records if r["event"] == "train"]
        return loss, load_file(str(out / "checkpoint-1" / "model" / "model.safetensors"))

    expected_loss, expected_weights = reference_first_step(tiny_bert, corpus, chunk=4)
    # the reference runs the backbone's padded forward: the same dropout draws need the padded step
    cached_loss, cached_weights = first_step("gc", {"gradient_cache_chunk": 4, "packed_tokens": False})
    plain_loss, _ = first_step("plain", {"packed_tokens": False})
    assert cached_loss == pytest.approx(expected_loss, abs=1e-5)
    assert abs(plain_loss - expected_loss) > 1e-3, "one forward over the batch draws other masks"
    compared = 0
    for key, value in cached_weights.items():
        ref = expected_weights.get(key, expected_weights.get(key.removeprefix("bert.")))
        if ref is None:
            continue
        compared += 1
        diff = float((value - ref).abs().max())
        assert diff <= 2e-4, f"{key}: weights differ by {diff:.2e}"
    assert compared >= 10, f"only {compared} weight tensors matched by name"


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


def test_gradient_cache_with_mlm_trains_like_the_plain_loop(
    tmp_path: Path, tiny_bert: Path, corpus: Path, data_dir: Path
) -> None:
    """The MLM term composes with GradCache: dropout off, chunks of 3 give the plain run's losses and weights
    (MLM head included: each chunk's share of the masked positions, summed, is the whole batch's loss)."""
    mlm = {"mlm_weight": 0.1, "mlm_new_head": True}
    plain, cached = plain_and_cached(tmp_path, tiny_bert, corpus, data_dir, objective=mlm)
    assert_same_run(cached, plain, atol=1e-5, weight_atol=2e-4)
    records = [json.loads(x) for x in (tmp_path / "gc" / "run" / "metrics.jsonl").read_text().splitlines()]
    assert all(r["mlm"] > 0 for r in records if r["event"] == "train"), "the MLM term is in the loss"


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
