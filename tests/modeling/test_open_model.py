"""open_model: the folder kind worked out once, one loader per kind, every result an ``Encoder`` whose
``max_length`` is the inference truncation; sentcl.json files written before the rename still read."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import pytest

from sentcl import open_model
from sentcl.files.paths import resolve_model_path
from sentcl.interop.onnx import export_onnx
from sentcl.modeling import open as open_module
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


# ---------------------------------------------------------------- one downward pass

MODELING = str(Path(open_module.__file__).parent) + "/"
SENTCL = str(Path(open_module.__file__).parents[1]) + "/"
LOADER_FILES = ("open.py", "locate.py", "loading.py")


def _importing(frame: FrameType | None) -> bool:
    """Whether a sentcl module is being imported up the stack (its registrations are not the load's walk)."""
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_code.co_filename.startswith(SENTCL):
            return True
        frame = frame.f_back
    return False


def first_calls(fn: Callable[[], Any]) -> list[str]:
    """The files of sentcl/modeling in the order their functions are first called while ``fn`` runs (calls made
    by an import left out; consecutive repeats collapsed)."""
    seen: set[Any] = set()
    files: list[str] = []

    def profile(frame: FrameType, event: str, _: Any) -> None:
        code = frame.f_code
        if event != "call" or code in seen or not code.co_filename.startswith(MODELING) or _importing(frame):
            return
        seen.add(code)
        name = code.co_filename[len(MODELING) :]
        if not files or files[-1] != name:
            files.append(name)

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return files


@pytest.mark.parametrize("kind", ["sentcl", "dual", "st", "transformers"])
def test_a_model_opens_in_one_downward_pass(folders: dict[str, Path], kind: str) -> None:
    """open.py, then locate.py (the kind), then loading.py (backbone, parts, the encoder built last): the walk
    never comes back to a loader file it has left, and the encoder does not call back into the loader."""
    files = first_calls(lambda: open_model(str(folders[kind])))
    assert [f for f in files if f in LOADER_FILES] == list(LOADER_FILES), files
    returns = [f for i, f in enumerate(files) if f in (*LOADER_FILES, "encoder.py") and f in files[:i]]
    assert returns == [], files


def test_the_pass_check_sees_a_return(folders: dict[str, Path]) -> None:
    """The recorder above sees a loader file entered again: locate, load, then a locate.py property."""
    from sentcl.modeling.loading import LoadOptions, load_single

    def bouncing() -> None:
        source = locate(str(folders["sentcl"]))
        load_single(source, LoadOptions(), SentenceEncoder)
        assert source.folder.is_dir()  # ModelSource.folder, a function of locate.py the loader does not call

    files = first_calls(bouncing)
    loader = [f for f in files if f in LOADER_FILES]
    assert loader == ["locate.py", "loading.py", "locate.py"], files
