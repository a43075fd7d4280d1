"""open_model: the folder kind worked out once, one loader per kind, every result an ``Encoder`` whose
``max_length`` is the inference truncation; sentcl.json files written before the rename still read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from sentcl import open_model
from sentcl.files.paths import resolve_model_path
from sentcl.interop.onnx import export_onnx
from sentcl.modeling.dual import DualEncoder
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.onnx_encoder import OnnxEncoder
from sentcl.modeling.open import locate
from sentcl.types import Encoder

SENTENCES = ["a man is playing a guitar", "the dog runs", "a"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory, tiny_bert: Path) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("kinds")
    f = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    g = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    f.save_pretrained(root / "sentcl")
    DualEncoder(f, g, "concat").save_pretrained(root / "dual")
    shutil.copytree(root / "sentcl", root / "st")
    (root / "st" / "sentcl.json").unlink()
    export_onnx(str(root / "sentcl"), root / "onnx")
    return {"sentcl": root / "sentcl", "dual": root / "dual", "st": root / "st", "onnx": root / "onnx",
            "transformers": tiny_bert}  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "cls"),
    [("sentcl", SentenceEncoder), ("dual", DualEncoder), ("sentence-transformers", SentenceEncoder),
     ("transformers", SentenceEncoder), ("onnx", OnnxEncoder)],
)  # fmt: skip
def test_each_kind_opens_as_an_encoder(folders: dict[str, Path], kind: str, cls: type) -> None:
    folder = folders["st" if kind == "sentence-transformers" else kind]
    assert locate(str(folder)).kind == kind
    model = open_model(str(folder), pooler="avg" if kind == "transformers" else None)
    assert type(model) is cls and isinstance(model, Encoder)
    emb = model.encode(SENTENCES)
    assert emb.shape == (3, model.embedding_dim)
    sims = model.similarity(SENTENCES[:2], SENTENCES)
    # cosine by hand from the embeddings
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    np.testing.assert_allclose(sims, unit[:2] @ unit.T, atol=1e-5)


def test_max_length_is_the_inference_length_everywhere(tmp_path: Path) -> None:
    mini = Path(resolve_model_path("all-MiniLM-L6-v2"))
    seq = json.loads((mini / "sentence_bert_config.json").read_text())["max_seq_length"]
    torch_model = open_model("all-MiniLM-L6-v2")
    assert torch_model.max_length == seq == 256 and torch_model.train_max_length == 32
    long = " ".join(["word"] * 600)
    # encode truncates at max_length: the same vector as the text cut to max_length tokens by hand
    ids = torch_model.tokenizer(long, truncation=True, max_length=seq)["input_ids"]
    cut = torch_model.tokenizer.decode(ids[1:-1])
    np.testing.assert_allclose(torch_model.encode(long), torch_model.encode(cut), atol=1e-5)
    export_onnx("all-MiniLM-L6-v2", tmp_path / "onnx")
    assert open_model(str(tmp_path / "onnx")).max_length == seq


def test_old_sentcl_json_keys_still_read(folders: dict[str, Path], tmp_path: Path) -> None:
    """Before the rename sentcl.json said max_length (training) and inference_max_length (inference)."""
    old = tmp_path / "old"
    shutil.copytree(folders["sentcl"], old)
    meta = json.loads((old / "sentcl.json").read_text())
    meta.pop("train_max_length")
    meta.update(max_length=16, inference_max_length=24)
    (old / "sentcl.json").write_text(json.dumps(meta))
    model = open_model(str(old))
    assert (model.train_max_length, model.max_length) == (16, 24)
    model.save_pretrained(tmp_path / "new")  # written in today's spelling, read back the same
    new_meta = json.loads((tmp_path / "new" / "sentcl.json").read_text())
    assert (new_meta["train_max_length"], new_meta["max_length"]) == (16, 24)
    again = open_model(str(tmp_path / "new"))
    assert (again.train_max_length, again.max_length) == (16, 24)


def test_backend_choices(folders: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match="not an exported ONNX folder"):
        open_model(str(folders["sentcl"]), backend="onnx")
    with pytest.raises(ValueError, match="is an exported ONNX folder .* not a PyTorch model"):
        open_model(str(folders["onnx"]), backend="torch")
    with pytest.raises(ValueError, match="needs a single encoder"):
        open_model(str(folders["dual"]), truncate_dim=4)
