"""Damaged model folders and the export's output folder, through the real CLI.

Every row copies a good folder (a sentcl folder, a sentence-transformers folder sentcl did not write, an ONNX
export of the tiny random BERT, or all-MiniLM-L6-v2 itself), damages one file and runs ``sentcl encode`` on it
in-process: one ``sentcl encode: error: ...`` line naming the file and the mismatch, exit 2, no traceback, no
output written. The rows go beyond the reported instances: every JSON file of a folder, every weight file
(backbone, head, Dense module), every module's shape against the width it receives.
"""

from __future__ import annotations

import json
import logging
import pickle
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from harness import Case, parametrize, run_case
from safetensors.torch import save_file
from torch import nn

from sentcl.files.output import TEMP_MARKER
from sentcl.files.paths import resolve_model_path
from sentcl.interop.onnx import export_onnx
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.st_write import write_dense

ENV: dict[str, Path] = {}
MARKER = "PWNED_BY_BIN"


@pytest.fixture(scope="module", autouse=True)
def good_folders(tmp_path_factory: pytest.TempPathFactory, tiny_bert: Path) -> None:
    root = tmp_path_factory.mktemp("damaged_models")
    SentenceEncoder.from_pretrained(str(tiny_bert), pooler="cls").save_pretrained(root / "sentcl")
    SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg").save_pretrained(root / "st")
    (root / "st" / "sentcl.json").unlink()  # a sentence-transformers folder sentcl did not write
    export_onnx(str(tiny_bert), root / "onnx", pooler="avg")
    ENV.update(sentcl=root / "sentcl", st=root / "st", onnx=root / "onnx")
    ENV["mini"] = Path(resolve_model_path("all-MiniLM-L6-v2"))


class Payload:
    """A pickle whose loading writes a marker file: proof that it was (not) unpickled."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # noqa: ANN204
        return (Path.write_text, (self.marker, "unpickled"))


def copy_of(kind: str, change: Callable[[Path], None]) -> Callable[[Path], list[str]]:
    """A row: a copy of the good ``kind`` folder with ``change`` applied, then sentcl encode on it."""

    def setup(folder: Path) -> list[str]:
        model = folder / "model"
        if kind == "mini":  # a light copy: links to the real files, so a change must replace, not edit
            model.mkdir(parents=True)
            for item in ENV["mini"].iterdir():
                (model / item.name).symlink_to(item)
        else:
            shutil.copytree(ENV[kind], model)
        change(model)
        (folder / "two.txt").write_text("a cat sat\nthe dog ran\n", encoding="utf-8")
        return [
            "encode",
            "--model",
            str(model),
            "--input",
            str(folder / "two.txt"),
            "--output",
            str(folder / "o.npy"),
        ]

    return setup


def then(*changes: Callable[[Path], object]) -> Callable[[Path], None]:
    def change(model: Path) -> None:
        for one in changes:
            one(model)

    return change


def replace_text(name: str, edit: Callable[[str], str]) -> Callable[[Path], None]:
    def change(model: Path) -> None:
        text = (model / name).read_text(encoding="utf-8")
        (model / name).unlink()
        (model / name).write_text(edit(text), encoding="utf-8")

    return change


def edit_json(name: str, **changes: object) -> Callable[[Path], None]:
    return replace_text(name, lambda text: json.dumps({**json.loads(text), **changes}))


def cut_file(name: str, keep: float) -> Callable[[Path], None]:
    def change(model: Path) -> None:
        data = (model / name).read_bytes()
        (model / name).unlink()
        (model / name).write_bytes(data[: int(len(data) * keep)])

    return change


def swap_middle_byte(name: str) -> Callable[[Path], None]:
    """One byte in the middle of ``name`` changed, same size: another graph, as a swapped or rotted file is."""

    def change(model: Path) -> None:
        data = bytearray((model / name).read_bytes())
        data[len(data) // 2] ^= 0x01
        (model / name).unlink()
        (model / name).write_bytes(bytes(data))

    return change


def pickled_weights(sub: str = "") -> Callable[[Path], None]:
    """Replace ``sub``'s model.safetensors with a pytorch_model.bin whose unpickling writes the marker."""

    def change(model: Path) -> None:
        target = model / sub
        (target / "model.safetensors").unlink()
        with open(target / "pytorch_model.bin", "wb") as fh:
            pickle.dump(Payload(model.parent / MARKER), fh)

    return change


def add_dense(
    in_features: int, out_features: int, second: tuple[int, int] | None = None
) -> Callable[[Path], None]:
    """Append Dense module(s) to modules.json, each consistent with its own weights."""

    def change(model: Path) -> None:
        modules = json.loads((model / "modules.json").read_text())
        (model / "modules.json").unlink()
        modules = [m for m in modules if not m["type"].endswith("Normalize")]
        for a, b in [(in_features, out_features), *([second] if second else [])]:
            path = f"{len(modules)}_Dense"
            write_dense(nn.Linear(a, b), "tanh", model / path)
            modules.append(
                {
                    "idx": len(modules),
                    "name": str(len(modules)),
                    "path": path,
                    "type": "sentence_transformers.models.Dense",
                }
            )
        (model / "modules.json").write_text(json.dumps(modules))

    return change


def head_of_shape(n: int) -> Callable[[Path], None]:
    def change(model: Path) -> None:
        save_file(
            {"dense.weight": torch.zeros(n, n), "dense.bias": torch.zeros(n)},
            str(model / "sentcl_head.safetensors"),
        )

    return change


def sharded(drop: str | None = None, cut: str | None = None) -> Callable[[Path], None]:
    """The backbone saved in shards (model.safetensors.index.json), one shard removed or cut in half."""

    def change(model: Path) -> None:
        from transformers import AutoModel

        backbone = AutoModel.from_pretrained(str(model))
        (model / "model.safetensors").unlink()
        backbone.save_pretrained(model, max_shard_size="20KB")
        shards = sorted(model.glob("model-*-of-*.safetensors"))
        assert len(shards) > 2
        if drop:
            shards[1].unlink()
        if cut:
            cut_file(shards[1].name, 0.5)(model)

    return change


def empty_folder(model: Path) -> None:
    for item in model.iterdir():
        shutil.rmtree(item) if item.is_dir() and not item.is_symlink() else item.unlink()


def not_unpickled(folder: Path, printed: str) -> None:
    assert not (folder / MARKER).exists(), "the pickle was unpickled: its payload ran"
    assert not (folder / "o.npy").exists()


def no_output(folder: Path, printed: str) -> None:
    assert not (folder / "o.npy").exists()


GARBAGE = '{"hidden_size": 32,, oops'

CASES = [
    # M01 / M04: the backbone's weights file cut in half / empty (tiny sentcl folder and MiniLM itself)
    Case("M01_truncated_safetensors", copy_of("sentcl", cut_file("model.safetensors", 0.5)),
         r"model/model\.safetensors: not a readable safetensors file .*truncated or damaged", check=no_output),
    Case("M01_truncated_safetensors_minilm", copy_of("mini", cut_file("model.safetensors", 0.5)),
         r"model/model\.safetensors: not a readable safetensors file", check=no_output),
    Case("M01_missing_shard", copy_of("sentcl", sharded(drop="one")),
         r"model/model-00002-of-\d+\.safetensors: missing; \S+model\.safetensors\.index\.json lists it",
         check=no_output),
    Case("M01_truncated_shard", copy_of("sentcl", sharded(cut="one")),
         r"model/model-00002-of-\d+\.safetensors: not a readable safetensors file", check=no_output),
    Case("M04_empty_safetensors", copy_of("sentcl", cut_file("model.safetensors", 0.0)),
         r"model/model\.safetensors: empty \(0 bytes\)", check=no_output),
    Case("M04_empty_head_file", copy_of("sentcl", cut_file("sentcl_head.safetensors", 0.0)),
         r"model/sentcl_head\.safetensors: empty \(0 bytes\)", check=no_output),
    Case("M04_truncated_dense_weights", copy_of("st", then(add_dense(32, 16), cut_file("2_Dense/model.safetensors", 0.6))),
         r"2_Dense/model\.safetensors: not a readable safetensors file", check=no_output),
    # M07: config.json's hidden_size does not match the weights (MiniLM 768 over 384; tiny 64 over 32)
    Case("M07_hidden_size_minilm", copy_of("mini", edit_json("config.json", hidden_size=768)),
         r"model/config\.json: does not match the weights: \S+ is \([\d, ]*384,?\) in the weights file but "
         r"\([\d, ]*768,?\) for config\.json \(hidden_size=768\); \d+ more tensor", check=no_output),
    Case("M07_hidden_size_tiny", copy_of("st", edit_json("config.json", hidden_size=64)),
         r"model/config\.json: does not match the weights: .*hidden_size=64", check=no_output),
    Case("M07_intermediate_size", copy_of("sentcl", edit_json("config.json", intermediate_size=48)),
         r"model/config\.json: does not match the weights: \S+intermediate\S+ is \(64,?\) in the weights "
         r"file but \(48,?\) for config\.json \(intermediate_size=48\)", check=no_output),
    Case("M07_vocab_size", copy_of("sentcl", edit_json("config.json", vocab_size=500)),
         r"model/config\.json: does not match the weights: \S+word_embeddings\S+ is \(\d+, 32\) .* "
         r"\(500, 32\) for config\.json \(vocab_size=500\)", check=no_output),
    # M08 / X10: garbage in any JSON file of the folder names that file
    *[Case(f"M08_garbage_{name.replace('/', '_')}", copy_of(kind, replace_text(name, lambda t: t[: len(t) // 3])),
           rf"model/{name}: .*not valid JSON \(line \d+, column \d+", check=no_output)
      for kind, name in (("sentcl", "tokenizer.json"), ("mini", "tokenizer.json"), ("sentcl", "config.json"),
                         ("sentcl", "sentcl.json"), ("st", "modules.json"), ("st", "1_Pooling/config.json"),
                         ("sentcl", "tokenizer_config.json"), ("sentcl", "2_Dense/config.json"),
                         ("mini", "sentence_bert_config.json"), ("onnx", "tokenizer.json"))],
    Case("X10_garbage_sentcl_onnx_json", copy_of("onnx", replace_text("sentcl_onnx.json", lambda t: "{garbage")),
         r"model/sentcl_onnx\.json: not valid JSON \(line 1, column 2", check=no_output),
    Case("X10_sentcl_onnx_json_wrong_type", copy_of("onnx", edit_json("sentcl_onnx.json", max_length="long")),
         r"model/sentcl_onnx\.json: 'max_length' must be a positive whole number, got 'long'", check=no_output),
    # M10: a Dense module whose in_features does not match what it receives (MiniLM 384, tiny 32)
    Case("M10_dense_in_features_minilm", copy_of("mini", add_dense(768, 128)),
         r"model/2_Dense/config\.json: in_features 768 does not match the 384 values it receives "
         r"\(the backbone's hidden_size", check=no_output),
    Case("M10_dense_in_features_tiny", copy_of("st", add_dense(64, 16)),
         r"2_Dense/config\.json: in_features 64 does not match the 32 values it receives", check=no_output),
    Case("M10_dense_chain", copy_of("st", add_dense(32, 16, second=(32, 8))),
         r"3_Dense/config\.json: in_features 32 does not match the 16 values it receives \(out_features of "
         r".*2_Dense/config\.json\)", check=no_output),
    Case("M10_dense_weights_vs_config", copy_of("st", then(add_dense(32, 16), edit_json("2_Dense/config.json", out_features=20))),
         r"2_Dense/model\.safetensors: tensor linear\.weight has shape \(16, 32\), but .*2_Dense/config\.json "
         r"\(in_features 32, out_features 20\) needs \(20, 32\)", check=no_output),
    # M11: a folder with no model files at all (and one with only a README)
    Case("M11_empty_folder", copy_of("sentcl", empty_folder), r"no model files in \S+/model \(none of", check=no_output),
    Case("M11_readme_only", copy_of("sentcl", then(empty_folder, lambda m: (m / "README.md").write_text("hi"))),
         r"no model files in \S+/model", check=no_output),
    # M12: a pickled checkpoint is refused without being unpickled (backbone and Dense module)
    Case("M12_pickled_backbone", copy_of("sentcl", pickled_weights()),
         r"model/pytorch_model\.bin: a pickled PyTorch checkpoint; sentcl does not unpickle .*safetensors",
         check=not_unpickled),
    Case("M12_pickled_dense", copy_of("st", then(add_dense(32, 16), pickled_weights("2_Dense"))),
         r"2_Dense/pytorch_model\.bin: a pickled PyTorch checkpoint", check=not_unpickled),
    # M13: the head's shape does not match the backbone's hidden size
    Case("M13_head_shape", copy_of("sentcl", head_of_shape(8)),
         r"model/sentcl_head\.safetensors: tensor dense\.(weight|bias) has shape \(8(, 8)?\), but the "
         r"backbone's hidden_size 32 needs \(32(, 32)?\)", check=no_output),
    # X08 / X09: a truncated graph; metadata whose dim is not the graph's
    Case("X08_truncated_onnx", copy_of("onnx", cut_file("model.onnx", 0.5)),
         r"model/model\.onnx: onnxruntime cannot load it .*truncated or damaged", check=no_output),
    Case("X_swap_model", copy_of("onnx", swap_middle_byte("model.onnx")),
         r"model/model\.onnx changed since it was written: .*sentcl_onnx\.json records .*export the model again",
         check=no_output),
    Case("X08_empty_onnx", copy_of("onnx", cut_file("model.onnx", 0.0)),
         r"model/model\.onnx: onnxruntime cannot load it", check=no_output),
    Case("X08_onnx_without_tokenizer", copy_of("onnx", lambda m: [(m / n).unlink() for n in
                                                                  ("tokenizer.json", "vocab.txt") if (m / n).exists()]),
         r"model: no tokenizer files \(none of tokenizer\.json", check=no_output),
    Case("X09_onnx_dim", copy_of("onnx", edit_json("sentcl_onnx.json", dim=128)),
         r"model/sentcl_onnx\.json: dim 128 does not match \S+/model\.onnx, whose output has 32 values",
         check=no_output),
]  # fmt: skip


def export_into(prepare: Callable[[Path], None]) -> Callable[[Path], list[str]]:
    """A row: ``prepare`` the folder (OUT is ``folder/out``), then export the tiny model into OUT."""

    def setup(folder: Path) -> list[str]:
        prepare(folder)
        return ["export", "--format", "onnx", str(ENV["st"]), str(folder / "out")]

    return setup


def dead_pid() -> int:
    """The id of a process that has ended (a killed export's)."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return int(done.stdout)


def killed_export_leftovers(folder: Path) -> None:
    """What a kill -9 left: this version's temporary sibling (marked with its owner, whose process is gone),
    beside a folder of the user's that only looks like one (no owner record)."""
    tmp = folder / f".tmp-out-p{dead_pid()}-0123abcd"
    tmp.mkdir(parents=True)
    (tmp / "raw.onnx").write_bytes(b"\x08\x07partial")
    (tmp / TEMP_MARKER).write_text(
        json.dumps({"pid": dead_pid(), "host": socket.gethostname(), "target": "out"}), encoding="utf-8"
    )
    (folder / ".tmp-out-0123abcd").mkdir(parents=True)
    (folder / ".tmp-out-0123abcd" / "notes.txt").write_text("mine\n", encoding="utf-8")


def exported_and_clean(folder: Path, printed: str) -> None:
    """The rerun succeeds: the killed export's temporary removed, the user's look-alike kept, OUT complete."""
    assert sorted(p.name for p in folder.iterdir()) == [".tmp-out-0123abcd", "out"]
    assert (folder / ".tmp-out-0123abcd" / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    meta = json.loads((folder / "out" / "sentcl_onnx.json").read_text(encoding="utf-8"))
    assert meta["dim"] == 32 and (folder / "out" / "model.onnx").stat().st_size > 1000


def file_intact(folder: Path, printed: str) -> None:
    assert (folder / "out").read_text() == "my notes\n"


EXPORT_CASES = [
    Case("X02_out_is_a_file", export_into(lambda f: (f / "out").write_text("my notes\n")),
         r"OUT \S+/out is a file", check=file_intact),
    Case("X12_rerun_after_kill", export_into(killed_export_leftovers), None, check=exported_and_clean),
    Case("X12_out_holds_user_files", export_into(lambda f: ((f / "out").mkdir(), (f / "out" / "notes.txt").write_text("x"))),
         r"\S+/out holds files sentcl did not write \(notes\.txt\), not a sentcl ONNX export"),
]  # fmt: skip


@parametrize(EXPORT_CASES)
def test_export_output_case(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_case(case, tmp_path, capsys)


@parametrize(CASES)
def test_damaged_model_case(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_case(case, tmp_path, capsys)


def test_pickle_payload_would_run(tmp_path: Path) -> None:
    """The payload is live: plain unpickling writes the marker (so the rows' 'not unpickled' check can fail)."""
    with open(tmp_path / "p.bin", "wb") as fh:
        pickle.dump(Payload(tmp_path / MARKER), fh)
    with open(tmp_path / "p.bin", "rb") as fh:
        pickle.load(fh)  # noqa: S301 - the point of the test
    assert (tmp_path / MARKER).read_text() == "unpickled"


def test_good_folders_encode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The undamaged copies encode (so each row fails for its damage only)."""
    for kind in ("sentcl", "st", "onnx", "mini"):
        run_case(Case(f"good_{kind}", copy_of(kind, lambda m: None), None), tmp_path / kind, capsys)


def test_x12_leftovers_are_named(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The removal of a killed export's temporary is logged with its path (X12: the rerun named nothing);
    a look-alike without an owner record is the user's and stays (X_tmp_glob)."""
    from sentcl.files.output import remove_stale_temps

    killed_export_leftovers(tmp_path)
    with caplog.at_level("WARNING", logger="sentcl"):
        removed = remove_stale_temps(tmp_path / "out", logging.getLogger("sentcl").warning)
    assert not list(tmp_path.glob(".tmp-out-p*"))
    assert len(removed) == 1 and str(removed[0]) in caplog.text and "interrupted write" in caplog.text
    assert (tmp_path / ".tmp-out-0123abcd" / "notes.txt").is_file()
