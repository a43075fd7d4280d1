"""Loading folders sentcl did not save: never a random head at inference.

References: sentence-transformers' own ``encode``; plain ``AutoModel(...).pooler_output`` (what SimCSE's
evaluation.py --pooler cls reads); the SimCSE reference's head initialisation (normal(0, initializer_range),
bias 0) for training.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from modeling_folders import SENTENCES, plain_bert, st_encode, st_folder
from transformers import AutoModel, AutoTokenizer

from sentcl.config import ModelConfig
from sentcl.files.paths import ModelFolderError, resolve_model_path
from sentcl.modeling import SentenceEncoder
from sentcl.modeling.build import build_encoder

LONG = " ".join(["the big red car is on the road near the house"] * 30)  # > 256 word pieces


def test_minilm_loads_the_same_twice_and_equals_sentence_transformers() -> None:
    sentences = [*SENTENCES, LONG]
    first = SentenceEncoder.from_pretrained("all-MiniLM-L6-v2").encode(sentences)
    second = SentenceEncoder.from_pretrained("all-MiniLM-L6-v2").encode(sentences)
    np.testing.assert_array_equal(first, second)
    reference = st_encode(Path(resolve_model_path("all-MiniLM-L6-v2")), sentences)
    np.testing.assert_allclose(first, reference, atol=1e-5)  # incl. its max_seq_length 256 on LONG


@pytest.mark.parametrize(
    ("mode", "dense", "normalize", "pooler"),
    [
        ("mean", [], False, "avg"),
        ("cls", [], True, "cls_before_pooler"),
        ("cls", [(32, "Tanh")], False, "cls"),  # [CLS] + an H->H Tanh Dense: sentcl's MLP head
        ("cls", [(32, "LeakyReLU"), (16, "Identity")], True, "cls"),
        ("mean", [(32, "Tanh"), (8, "ReLU")], True, "avg"),  # Dense after mean: layers, not a head
    ],
)
def test_st_folder_equals_sentence_transformers(
    tmp_path: Path, tiny_bert: Path, mode: str, dense: list[tuple[int, str]], normalize: bool, pooler: str
) -> None:
    folder = st_folder(tmp_path / "st", tiny_bert, mode, dense, normalize, max_seq_length=12)
    sentences = [*SENTENCES, " ".join(["music"] * 40)]  # the last is cut at max_seq_length
    model = SentenceEncoder.from_pretrained(str(folder))
    assert model.pooler == pooler
    ours = model.encode(sentences)
    np.testing.assert_allclose(ours, st_encode(folder, sentences), atol=1e-5)
    np.testing.assert_array_equal(ours, SentenceEncoder.from_pretrained(str(folder)).encode(sentences))


def _pooler_output(folder: Path, sentences: list[str]) -> np.ndarray:
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder)).eval()
    with torch.no_grad():
        return np.concatenate(
            [model(**tokenizer([s], return_tensors="pt")).pooler_output.numpy() for s in sentences]
        )


def test_plain_folder_with_cls_uses_the_backbones_own_pooler(tmp_path: Path) -> None:
    """An official-SimCSE-like folder: a BertModel whose trained MLP sits in pooler.dense."""
    folder = plain_bert(tmp_path / "simcse_like", pooler=True)
    first = SentenceEncoder.from_pretrained(str(folder)).encode(SENTENCES)
    second = SentenceEncoder.from_pretrained(str(folder), pooler="cls").encode(SENTENCES)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, _pooler_output(folder, SENTENCES), atol=1e-5)


def test_backbone_without_pooler_is_an_error_naming_the_headless_poolers(tmp_path: Path) -> None:
    folder = plain_bert(tmp_path / "no_pooler", pooler=False)
    with pytest.raises(ModelFolderError, match="cls_before_pooler, avg, avg_top2, avg_first_last") as err:
        SentenceEncoder.from_pretrained(str(folder))
    assert "pooler.dense is missing" in str(err.value)
    SentenceEncoder.from_pretrained(str(folder), pooler="avg").encode(SENTENCES)  # a headless pooler works


def test_training_from_a_plain_folder_starts_a_head_as_the_reference(tmp_path: Path) -> None:
    folder = plain_bert(tmp_path / "wide", pooler=True, initializer_range=0.05, hidden=64)
    model = build_encoder(ModelConfig(name_or_path=str(folder), pooler="cls"))
    weight, bias = model.head.dense.weight.detach(), model.head.dense.bias.detach()
    assert torch.equal(bias, torch.zeros_like(bias))
    # 4096 draws of normal(0, 0.05): sample std within 5 %, mean within 4 standard errors
    assert abs(weight.std().item() / 0.05 - 1) < 0.05
    assert abs(weight.mean().item()) < 4 * 0.05 / 64
    backbone_pooler = AutoModel.from_pretrained(str(folder)).pooler.dense.weight
    assert not torch.allclose(weight, backbone_pooler), "training starts a new head, not the pooler"


def test_training_from_an_st_folder_takes_its_pooling_and_logs_it(
    tmp_path: Path, tiny_bert: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = st_folder(tmp_path / "st", tiny_bert, "mean", [], False)
    with caplog.at_level(logging.INFO, logger="sentcl"):
        model = build_encoder(ModelConfig(name_or_path=str(folder)))
    assert model.pooler == "avg" and model.head is None
    assert any("sentence-transformers folder: pooler 'avg'" in r.getMessage() for r in caplog.records)
    explicit = build_encoder(ModelConfig(name_or_path=str(folder), pooler="avg_top2"))
    assert explicit.pooler == "avg_top2"


def test_st_pooling_sentcl_cannot_express_is_refused(tmp_path: Path, tiny_bert: Path) -> None:
    folder = st_folder(tmp_path / "st", tiny_bert, "max", [], False)
    with pytest.raises(
        ModelFolderError, match=r"1_Pooling/config.json: pooling mode max has no sentcl pooler"
    ):
        SentenceEncoder.from_pretrained(str(folder))
