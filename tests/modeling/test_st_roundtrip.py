"""sentence-transformers both ways, with the installed sentence-transformers as the reference.

sentcl -> ST: every pooler saved by sentcl loads with ``SentenceTransformer(folder)`` to sentcl's normalised
embeddings within 1e-5, or (first-last / top-2 average) gets no ST files and one log line.
ST -> sentcl -> ST: a folder ST saved, loaded by sentcl and saved again, gives ST the same embeddings.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
from modeling_folders import SENTENCES, st_encode, st_folder

from sentcl.modeling import SentenceEncoder
from sentcl.modeling.pooling import POOLERS

ST_POOLERS = {"cls", "cls_before_pooler", "avg"}


@pytest.mark.parametrize(
    ("pooler", "mlp_only_train", "head_activation"),
    [(p, False, "tanh") for p in POOLERS] + [("cls", True, "tanh"), ("cls", False, "leaky_relu")],
)
def test_every_pooler_saved_by_sentcl_loads_in_sentence_transformers(
    tmp_path: Path,
    tiny_bert: Path,
    caplog: pytest.LogCaptureFixture,
    pooler: str,
    mlp_only_train: bool,
    head_activation: str,
) -> None:
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler=pooler, mlp_only_train=mlp_only_train)
    if model.head is not None:
        model.head.activation = head_activation
    ours = model.encode(SENTENCES, normalize=True)
    folder = tmp_path / "saved"
    with caplog.at_level(logging.WARNING, logger="sentcl"):
        model.save_pretrained(folder)
    np.testing.assert_array_equal(
        SentenceEncoder.from_pretrained(str(folder)).encode(SENTENCES, normalize=True), ours
    )
    if pooler not in ST_POOLERS:
        lines = [r.getMessage() for r in caplog.records if "sentence-transformers" in r.getMessage()]
        assert len(lines) == 1 and f"pooler '{pooler}' has no sentence-transformers Pooling" in lines[0]
        assert not any((folder / f).exists() for f in ("modules.json", "sentence_bert_config.json"))
        return
    np.testing.assert_allclose(st_encode(folder, SENTENCES, normalize=True), ours, atol=1e-5)
    settings = json.loads((folder / "sentence_bert_config.json").read_text())
    assert settings["max_seq_length"] == model.max_length
    assert (
        json.loads((folder / "config_sentence_transformers.json").read_text())["similarity_fn_name"]
        == "cosine"
    )
    modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((folder / "modules.json").read_text())]
    head_in_st = pooler == "cls" and not mlp_only_train
    assert modules == ["Transformer", "Pooling"] + (["Dense"] if head_in_st else [])
    if head_in_st:
        dense = json.loads((folder / "2_Dense" / "config.json").read_text())
        assert (
            dense["activation_function"].rsplit(".", 1)[-1]
            == {"tanh": "Tanh", "leaky_relu": "LeakyReLU"}[head_activation]
        )


@pytest.mark.parametrize(
    ("mode", "dense", "normalize"),
    [
        ("mean", [], True),
        ("cls", [], False),
        ("cls", [(32, "Tanh")], False),
        ("cls", [(32, "LeakyReLU")], True),
        ("mean", [(32, "Tanh"), (16, "Identity")], True),
    ],
)
def test_st_folder_through_sentcl_and_back(
    tmp_path: Path, tiny_bert: Path, mode: str, dense: list[tuple[int, str]], normalize: bool
) -> None:
    original = st_folder(tmp_path / "st", tiny_bert, mode, dense, normalize, max_seq_length=24)
    reference = st_encode(original, SENTENCES)
    model = SentenceEncoder.from_pretrained(str(original))
    np.testing.assert_allclose(model.encode(SENTENCES), reference, atol=1e-5)
    model.save_pretrained(tmp_path / "resaved")
    np.testing.assert_allclose(st_encode(tmp_path / "resaved", SENTENCES), reference, atol=1e-5)
    again = SentenceEncoder.from_pretrained(str(tmp_path / "resaved"))
    assert again.max_length == 24 and again.pooler == model.pooler
    np.testing.assert_array_equal(again.encode(SENTENCES), model.encode(SENTENCES))


def test_encode_takes_sentence_transformers_normalize_embeddings(tmp_path: Path, tiny_bert: Path) -> None:
    """``encode(normalize_embeddings=True)``, sentence-transformers' keyword, raised a TypeError: it gives
    what sentence-transformers gives for the same folder (and sentcl's ``normalize=True``)."""
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    folder = tmp_path / "saved"
    model.save_pretrained(folder)
    ours = model.encode(SENTENCES, normalize_embeddings=True)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(ours, st_encode(folder, SENTENCES, normalize=True), atol=1e-5)
    np.testing.assert_array_equal(ours, model.encode(SENTENCES, normalize=True))
    raw = model.encode(SENTENCES, normalize_embeddings=False)
    np.testing.assert_array_equal(raw, model.encode(SENTENCES))
    with pytest.raises(ValueError, match="disagree"):
        model.encode(SENTENCES, normalize=True, normalize_embeddings=False)
