"""Method wiring: fixed dropout masks, dropout 0, per-view heads, augmented views, the MLM head rule."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file

from sentcl.config import ConfigError, TrainConfig, load_config
from sentcl.data.readers import Corpus
from sentcl.methods import build_method
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.mlm_head import MLMHeadError, attach_mlm_head
from sentcl.training.batch_source import augment_tokens, make_batch
from sentcl.training.step import embed_views
from sentcl.training.validation import validate

SENTENCES = ["a man is playing a guitar", "the dog runs near the river", "stock price falls", "a cat sits"]


def method_for(tiny_bert: Path, *overrides: str):
    cfg = load_config(TrainConfig, None, [f"model.name_or_path={tiny_bert}", *overrides])
    model = SentenceEncoder.from_pretrained(
        str(tiny_bert), pooler=cfg.model.pooler, dropout=cfg.model.dropout
    )
    method = build_method(cfg, Corpus(Path("x"), list(SENTENCES)), model.tokenizer)
    return model, method


def views_of(model: SentenceEncoder, method) -> torch.Tensor:
    model.train()
    method.reseed(0, 0)
    batch = augment_tokens(make_batch(SENTENCES, method, model), method, len(SENTENCES))
    return embed_views(model, batch, method, len(SENTENCES))


def test_fixed_dropout_mask_gives_identical_views(tiny_bert: Path) -> None:
    model, method = method_for(tiny_bert, "model.same_dropout_mask=true", "model.dropout=0.1")
    z = views_of(model, method)
    torch.testing.assert_close(z[:, 0], z[:, 1], rtol=0, atol=0)
    model, method = method_for(tiny_bert, "model.dropout=0.1")
    z = views_of(model, method)
    assert (z[:, 0] - z[:, 1]).abs().max() > 1e-4, "independent masks differ"


def test_dropout_zero_gives_identical_views_in_train_mode(tiny_bert: Path) -> None:
    model, method = method_for(tiny_bert, "model.dropout=0.0")
    z = views_of(model, method)
    assert model.training
    torch.testing.assert_close(z[:, 0], z[:, 1], rtol=1e-6, atol=1e-6)


def test_cutoff_triplet_views_and_heads(tiny_bert: Path) -> None:
    model, method = method_for(
        tiny_bert,
        "objective.name=cutoff_triplet",
        "objective.triplet_form=weak_positive",
        "model.dropout=0.0",
    )
    method.reseed(0, 0)
    batch = augment_tokens(make_batch(SENTENCES, method, model), method, len(SENTENCES))
    ids = batch["input_ids"].view(len(SENTENCES), 3, -1)  # (B, V, L)
    unk = model.tokenizer.unk_token_id
    real = (batch["attention_mask"].view(len(SENTENCES), 3, -1) == 1) & ~torch.isin(
        ids, torch.tensor([model.tokenizer.cls_token_id, model.tokenizer.sep_token_id])
    )
    n = real[:, 0].sum(dim=1)
    assert torch.equal((ids[:, 0] == unk).sum(1), torch.zeros_like(n)), "the anchor is untouched"
    half_up = lambda rate: torch.clamp(torch.floor(rate * n + 0.5), min=1).long()  # noqa: E731
    assert torch.equal((ids[:, 1] == unk).sum(1), half_up(0.1))
    assert torch.equal(
        (ids[:, 2] == unk).sum(1), torch.maximum(half_up(0.2), torch.minimum(half_up(0.1) + 1, n))
    )
    # the strong view's head is LeakyReLU, the others Tanh, with one set of weights
    model.train()
    z = embed_views(model, batch, method, len(SENTENCES))
    cls = model.backbone(**batch).last_hidden_state[:, 0].view(len(SENTENCES), 3, -1)
    w, b = model.head.dense.weight, model.head.dense.bias
    torch.testing.assert_close(z[:, 0], torch.tanh(cls[:, 0] @ w.T + b))
    torch.testing.assert_close(z[:, 2], torch.nn.functional.leaky_relu(cls[:, 2] @ w.T + b))


def test_cutoff_triplet_needs_the_mlp_head(tiny_bert: Path) -> None:
    cfg = load_config(TrainConfig, None, [f"model.name_or_path={tiny_bert}", "objective.name=cutoff_triplet"])
    cfg.model.pooler = "avg"
    with pytest.raises(ConfigError, match="cutoff_triplet needs model.pooler=cls"):
        validate(cfg, environment=False)


def test_text_augmentation_changes_only_the_positive_view(tiny_bert: Path) -> None:
    model, method = method_for(tiny_bert, "data.augmentation=word_deletion", "data.augmentation_rate=0.2")
    method.reseed(0, 0)
    for sentence in SENTENCES:
        anchor, positive = method.views(sentence)
        assert anchor == sentence
        words = sentence.split()
        assert len(positive.split()) == len(words) - max(1, int(0.2 * len(words) + 0.5))


def test_augmentation_is_reseeded_per_step(tiny_bert: Path) -> None:
    _, method = method_for(tiny_bert, "data.augmentation=crop", "data.augmentation_rate=0.3")
    long = "the old man is reading a book near the river and the young woman plays a song"
    method.reseed(7, 3)
    first = [method.views(long)[1] for _ in range(3)]
    method.reseed(7, 3)
    assert [method.views(long)[1] for _ in range(3)] == first  # resume-exact: a function of (seed, step)


def test_mlm_head_missing_is_a_clear_error(tiny_bert: Path) -> None:
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    with pytest.raises(MLMHeadError, match="has no masked-LM head weights.*mlm_new_head=true"):
        attach_mlm_head(model, str(tiny_bert))
    mlm = attach_mlm_head(model, str(tiny_bert), allow_new_head=True)
    # the MLM model runs through the encoder's own backbone, decoder tied to its word embeddings
    assert getattr(mlm, mlm.base_model_prefix) is model.backbone
    assert mlm.get_output_embeddings().weight is model.backbone.get_input_embeddings().weight


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_torchrun_two_processes_equal_one_process(
    tmp_path: Path, tiny_bert: Path, corpus_file: Path, data_dir: Path
) -> None:
    """2 gloo ranks x batch 4 == 1 process x batch 8 (dropout 0 so the views are deterministic)."""

    def recipe(name: str, batch: int) -> Path:
        cfg = {
            "model": {"name_or_path": str(tiny_bert), "pooler": "cls", "dropout": 0.0, "max_length": 16},
            "data": {"data_dir": str(data_dir), "train_file": str(corpus_file)},
            "training": {
                "output_dir": str(tmp_path / name),
                "batch_size": batch,
                "max_steps": 3,
                "eval_steps": 0,
                "save_steps": 0,
                "progress": False,
                "learning_rate": 1e-3,
                "device": "cpu",
            },
            "eval": {"final_tasks": ["stsb_dev"]},
        }
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
        return path

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    single = subprocess.run(
        [sys.executable, "-m", "sentcl.cli", "train", "--config", str(recipe("single", 8))],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert single.returncode == 0, single.stderr[-3000:]
    launch = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=2",
        "--master_addr=127.0.0.1",
        f"--master_port={free_port()}",
        "-m",
        "sentcl.cli",
        "train",
        "--config",
        str(recipe("multi", 4)),
    ]
    multi = subprocess.run(launch, capture_output=True, text=True, env=env, timeout=600)
    assert multi.returncode == 0, multi.stderr[-3000:]
    a = load_file(str(tmp_path / "single" / "checkpoint-3" / "model" / "model.safetensors"))
    b = load_file(str(tmp_path / "multi" / "checkpoint-3" / "model" / "model.safetensors"))
    for key in a:
        # 2 ranks sum the gradients in another order; Adam scales that float noise up on tiny gradients
        # (measured 1.15e-5 on a weight after 3 steps with the reference head init, normal(0, 0.02))
        torch.testing.assert_close(b[key], a[key], rtol=1e-5, atol=5e-5, msg=key)
    start = load_file(str(tiny_bert / "model.safetensors"))
    assert any(not torch.allclose(a[k], start[k]) for k in start), "training moved the weights"


def test_mlm_replacement_refuses_a_checkpoint_without_mlm_head(tiny_bert: Path) -> None:
    with pytest.raises(ValueError, match="has no masked-LM head weights"):
        method_for(tiny_bert, "data.augmentation=mlm_replacement")
