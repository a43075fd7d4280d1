"""The MLM head reads only its own weights, and its output equals AutoModelForMaskedLM's on the same checkpoint."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForMaskedLM, BertConfig, BertForMaskedLM

from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.mlm_head import attach_mlm_head


@pytest.fixture(scope="module")
def mlm_checkpoint(tmp_path_factory: pytest.TempPathFactory, tiny_bert: Path) -> Path:
    """A tiny BertForMaskedLM (base + trained-looking head: every head tensor random, not the init)."""
    folder = tmp_path_factory.mktemp("mlm") / "ckpt"
    config = BertConfig.from_pretrained(str(tiny_bert))
    torch.manual_seed(3)
    model = BertForMaskedLM(config)
    with torch.no_grad():
        for p in model.cls.parameters():
            p.copy_(torch.randn_like(p) * 0.5)  # not the class's own init, so a new head would differ
    model.save_pretrained(folder)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (tiny_bert / name).is_file():
            shutil.copy(tiny_bert / name, folder / name)
    return folder


def test_head_output_equals_automodelformaskedlm(
    mlm_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    encoder = SentenceEncoder.from_pretrained(str(mlm_checkpoint), pooler="avg").eval()
    reference = AutoModelForMaskedLM.from_pretrained(str(mlm_checkpoint)).eval()

    def no_full_reload(*args: object, **kwargs: object) -> None:
        raise AssertionError("attach_mlm_head re-read the whole checkpoint")

    monkeypatch.setattr(AutoModelForMaskedLM, "from_pretrained", no_full_reload)
    mlm = attach_mlm_head(encoder, str(mlm_checkpoint)).eval()
    batch = encoder.tokenizer(
        ["a man is playing a guitar", "the dog runs"], padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        got = mlm(**batch).logits  # (N, L, V)
        expected = reference(**batch).logits
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)
    # one backbone: the MLM runs through the encoder's, decoder tied to its word embeddings
    assert getattr(mlm, mlm.base_model_prefix) is encoder.backbone
    assert mlm.get_output_embeddings().weight is encoder.backbone.get_input_embeddings().weight


def test_head_weights_are_the_checkpoints(mlm_checkpoint: Path) -> None:
    from safetensors.torch import load_file

    saved = load_file(str(mlm_checkpoint / "model.safetensors"))
    mlm = attach_mlm_head(
        SentenceEncoder.from_pretrained(str(mlm_checkpoint), pooler="avg"), str(mlm_checkpoint)
    )
    for name, tensor in mlm.cls.state_dict().items():
        key = f"cls.{name}"
        if key in saved:
            torch.testing.assert_close(tensor, saved[key], atol=0, rtol=0)
