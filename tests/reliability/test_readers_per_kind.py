"""One validating reader per kind of input, each met with the real thing: secrets (a FIFO nobody writes to, a
pipe that answers, /dev/zero, an empty --api-key), .npy arrays (an archive, a pickle, text, complex, NaN, inf,
zero and 1e30 rows), model folders (paths leading out, a symbolic link out, a shard map out, a tokenizer larger
than the embeddings, a backtracking regex, static tables of zeros or no width) and the input budget (padding
and long words keep the tokens the full text gives)."""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sentcl.cli import main
from sentcl.files.arrays import check_vectors
from sentcl.files.budget import char_budget, keep_for_tokens
from sentcl.files.fingerprint import tree_files
from sentcl.files.read import load_npy
from sentcl.files.secret import SecretError, read_secret_file


def _one_error(capsys: Any, command: str) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith(f"sentcl {command}: error: ")]
    assert len(lines) == 1, err
    return lines[0]


# ---- secrets -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("flag", "env"), [("", None), (" ", None), (None, ""), (None, "  ")])
def test_an_empty_key_is_refused_whichever_way_it_came(
    flag: str | None, env: str | None, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    import sentcl.cli.serve as serve_cli

    monkeypatch.setattr(serve_cli, "serve_on", lambda app, sock, config: None)  # never reached
    monkeypatch.delenv("SENTCL_API_KEY", raising=False)
    argv = ["serve", str(tiny_bert), "--port", "0", "--keep-malloc-threshold"]
    if flag is not None:
        argv += ["--api-key", flag]
    if env is not None:
        monkeypatch.setenv("SENTCL_API_KEY", env)
    try:
        code = main(argv)
    except SystemExit as stop:  # the option's own reader (argparse): one line, exit 2
        code = stop.code
    assert code == 2
    line = _one_error(capsys, "serve")
    assert re.search(r"--api-key.* (empty|blank)" if flag is not None else r"\$SENTCL_API_KEY is", line), line


def test_key_files_of_every_kind(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(SecretError, match="pipe that gave no key within 0.3 s"):
        read_secret_file(fifo, "--api-key-file", timeout=0.3)  # nobody writes: refused, not a hang
    assert time.monotonic() - start < 5
    writer = threading.Thread(target=lambda: fifo.write_text("k-fifo\n"))
    writer.start()
    assert read_secret_file(fifo, "--api-key-file", timeout=10) == "k-fifo"
    writer.join()
    read_end, write_end = os.pipe()  # what --api-key-file <(echo KEY) gives: /dev/fd/N
    os.write(write_end, b"k-pipe\n")
    os.close(write_end)
    try:
        assert read_secret_file(f"/dev/fd/{read_end}", "--api-key-file") == "k-pipe"
    finally:
        os.close(read_end)
    start = time.monotonic()
    with pytest.raises(SecretError, match="character device"):
        read_secret_file("/dev/zero", "--api-key-file")  # refused unread, at once
    assert time.monotonic() - start < 1
    big = tmp_path / "big"
    big.write_bytes(b"k" * 100_000)
    with pytest.raises(SecretError, match="over 4096 bytes"):
        read_secret_file(big, "--api-key-file")
    with pytest.raises(SecretError, match="is a directory"):
        read_secret_file(tmp_path, "--api-key-file")


# ---- arrays ------------------------------------------------------------------------------------------------


def test_files_named_npy_that_are_not_arrays(tmp_path: Path) -> None:
    np.savez(tmp_path / "a.npz", queries=np.ones((3, 4)))
    shutil.move(tmp_path / "a.npz", tmp_path / "archive.npy")
    (tmp_path / "pickle.npy").write_bytes(pickle.dumps([1, 2, 3]))
    (tmp_path / "text.npy").write_text("hello world\n")
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    cases = {
        "archive.npy": r"\.npz \(zip\) archive \(arrays: queries\)",
        "pickle.npy": "Python pickle",
        "text.npy": r"not a \.npy array \(it starts with b'hello wo'\)",
        "objects.npy": "it holds Python objects",
    }
    for name, message in cases.items():
        with pytest.raises(ValueError, match=message) as caught:
            load_npy(tmp_path / name, what="--queries")
        assert "allow_pickle" not in str(caught.value)
    with pytest.raises(ValueError, match="/dev/zero is a character device"):
        load_npy(Path("/dev/zero"), what="--queries")


def test_vectors_must_be_real_finite_and_have_a_direction() -> None:
    good = np.random.default_rng(0).normal(size=(5, 4))
    for bad, message in [
        (good.astype(np.complex64), "complex values"),
        (np.where(np.eye(5, 4) > 0, np.nan, good), "row 0 holds NaN"),
        (np.vstack([good, np.full((1, 4), np.inf)]), "row 5 holds inf"),
        (np.zeros((5, 4)), "row 0 is all zeros"),
        (good[:, :3], r"expected a \(N, 4\) array"),
        (np.empty((0, 4)), r"got shape \(0, 4\)"),
        (good[0], r"got shape \(4,\)"),
    ]:
        with pytest.raises(ValueError, match=message):
            check_vectors(bad, "--queries q.npy", width=4, directions=True)
    huge = check_vectors(good * 1e30, "--queries", width=4, directions=True)  # float64 rows of size 1e30
    reference = good / np.linalg.norm(good, axis=1, keepdims=True)
    np.testing.assert_allclose(huge, reference, rtol=1e-6)
    tiny = check_vectors((good * 1e-40).astype(np.float32), "--queries", width=4, directions=True)
    assert np.isfinite(tiny).all() and np.allclose(np.linalg.norm(tiny, axis=1), 1, atol=1e-3)


def test_index_build_refuses_nan_and_zero_queries(tiny_bert: Path, tmp_path: Path, capsys: Any) -> None:
    from helpers.shards import encode_argv

    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"the man {w} a guitar {i}\n" for i, w in enumerate(["plays"] * 30)))
    assert main(encode_argv(tiny_bert, corpus, tmp_path / "sh")) == 0
    for name, rows, message in [
        ("nan", np.full((4, 32), np.nan), "row 0 holds NaN"),
        ("zeros", np.zeros((4, 32)), "row 0 is all zeros"),
        ("complex", np.ones((4, 32), dtype=np.complex64), "complex values"),
    ]:
        np.save(tmp_path / f"{name}.npy", rows)
        argv = ["index", "build", "--embeddings", str(tmp_path / "sh"), "--type", "binary"]
        code = main([*argv, "--queries", str(tmp_path / f"{name}.npy"), "--output", str(tmp_path / name)])
        assert code == 2 and message in _one_error(capsys, "index")
        assert not (tmp_path / name).exists()


# ---- the input budget --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_tokenizer(tiny_bert: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_bert))


PIECES = st.sampled_from(
    [
        "a",
        "man",
        "guitar",
        " ",
        " " * 40,
        "\n",
        "x" * 101,
        "y" * 30,
        ".",
        "é",
        "\u200b",
        "\u0301",
        "\u00ad",
        "\ue000",
        "a\u200bb",
    ]
)


@settings(max_examples=60, deadline=None)
@example(
    parts=["a"] * 5 + ["x" * 101] * 2 + ["\u200b"] * 3 + ["a"], max_length=10
)  # words of dropped characters
@given(parts=st.lists(PIECES, min_size=1, max_size=60), max_length=st.integers(3, 12))
def test_the_cut_keeps_the_tokens_the_full_text_gives(
    tiny_tokenizer: Any, parts: list[str], max_length: int
) -> None:
    text = " ".join(parts)
    kept = keep_for_tokens(text, max_length)
    assert text.startswith(kept) and len(kept) <= max(len(text), char_budget(max_length))
    whole = tiny_tokenizer(text, truncation=True, max_length=max_length)["input_ids"]
    assert tiny_tokenizer(kept, truncation=True, max_length=max_length)["input_ids"] == whole


def test_padding_before_a_sentence_is_not_the_empty_string(tiny_tokenizer: Any) -> None:
    text = " " * 5000 + "a man is playing a guitar"
    kept = keep_for_tokens(text, 16)
    assert kept.endswith("guitar")
    assert keep_for_tokens("word " * 100_000, 8).count("word") == 8  # a huge text is cut near its budget


# ---- model folders -----------------------------------------------------------------------------------------


def _st_folder(tiny_bert: Path, root: Path, transformer_path: str) -> Path:
    """A sentence-transformers folder whose Transformer module is ``transformer_path``."""
    folder = root / "st"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    modules = [
        {"idx": 0, "name": "0", "path": transformer_path, "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    (folder / "modules.json").write_text(json.dumps(modules))
    return folder


def _encode(model: Path, tmp_path: Path) -> list[str]:
    (tmp_path / "in.txt").write_text("a man plays a guitar\n")
    return [
        "encode",
        "--model",
        str(model),
        "--input",
        str(tmp_path / "in.txt"),
        "--output",
        str(tmp_path / "o.npy"),
    ]


def test_module_paths_stay_inside_the_folder(tiny_bert: Path, tmp_path: Path, capsys: Any) -> None:
    shutil.copytree(tiny_bert, tmp_path / "ext")
    folder = _st_folder(tiny_bert, tmp_path, "../ext")
    assert main(_encode(folder, tmp_path)) == 2
    assert "names '../ext', outside the model folder" in _one_error(capsys, "encode")
    for name in ("/abs/ext", "sub/../../ext"):
        (folder / "modules.json").write_text((folder / "modules.json").read_text().replace("../ext", name))
        assert main(_encode(folder, tmp_path)) == 2
        assert "outside the model folder" in _one_error(capsys, "encode")
        (folder / "modules.json").write_text((folder / "modules.json").read_text().replace(name, "../ext"))
    (folder / "bb").symlink_to(tmp_path / "ext")  # a module folder linked in from outside: read, and hashed
    (folder / "modules.json").write_text((folder / "modules.json").read_text().replace("../ext", "bb"))
    from sentcl.files.fingerprint import model_fingerprint

    before = model_fingerprint(str(folder))
    assert folder / "bb" / "model.safetensors" in tree_files(folder)
    (tmp_path / "ext" / "config.json").write_text((tmp_path / "ext" / "config.json").read_text() + " ")
    assert model_fingerprint(str(folder)) != before  # the linked backbone changed: another model
    inner = tmp_path / "inner"
    (inner / "real").mkdir(parents=True)
    (inner / "real" / "w.bin").write_bytes(b"w")
    (inner / "link").symlink_to("real")
    (inner / "loop").symlink_to(".")  # a loop ends
    assert [p.relative_to(inner).as_posix() for p in tree_files(inner)] == ["link/w.bin", "real/w.bin"]


def test_a_shard_map_pointing_outside_is_refused(tiny_bert: Path, tmp_path: Path, capsys: Any) -> None:
    shutil.copytree(tiny_bert, tmp_path / "ext")
    model = tmp_path / "m"
    shutil.copytree(tiny_bert, model)
    (model / "model.safetensors").unlink()
    index = {"metadata": {}, "weight_map": {"embeddings.word_embeddings.weight": "../ext/model.safetensors"}}
    (model / "model.safetensors.index.json").write_text(json.dumps(index))
    assert main(_encode(model, tmp_path)) == 2
    assert "outside the model folder" in _one_error(capsys, "encode")


def test_a_tokenizer_larger_than_the_embeddings_is_refused_at_load(
    tiny_bert: Path, tmp_path: Path, capsys: Any
) -> None:
    model = tmp_path / "m"
    shutil.copytree(tiny_bert, model)
    spec = json.loads((model / "tokenizer.json").read_text())
    rows = len(spec["model"]["vocab"])
    spec["added_tokens"].append(
        {"id": rows, "content": "zzqq", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": True, "special": False}
    )  # fmt: skip
    (model / "tokenizer.json").write_text(json.dumps(spec))
    assert main(_encode(model, tmp_path)) == 2
    line = _one_error(capsys, "encode")
    assert f"the tokenizer has {rows + 1} tokens" in line and f"hold {rows} rows" in line


@pytest.mark.parametrize(
    ("where", "step"),
    [
        (
            "pre_tokenizer",
            {"type": "Split", "pattern": {"Regex": "(a+)+$"}, "behavior": "Isolated", "invert": False},
        ),
        ("normalizer", {"type": "Replace", "pattern": {"Regex": "(x+x+)+y"}, "content": "y"}),
    ],
)
def test_a_backtracking_tokenizer_pattern_is_refused(
    where: str, step: dict[str, Any], tiny_bert: Path, tmp_path: Path, capsys: Any
) -> None:
    from tokenizers import Tokenizer

    from sentcl.modeling.static import save_static

    spec = json.loads((tiny_bert / "tokenizer.json").read_text())
    key = "pretokenizers" if where == "pre_tokenizer" else "normalizers"
    spec[where] = {"type": "Sequence", key: [spec[where], step]}
    tokenizer = Tokenizer.from_str(json.dumps(spec))
    table = np.random.default_rng(0).normal(size=(tokenizer.get_vocab_size(), 4)).astype(np.float32)
    folder = save_static(tmp_path / "st", tokenizer, table)
    assert main(_encode(folder, tmp_path)) == 2
    line = _one_error(capsys, "encode")
    assert "repeats a repetition" in line and where in line


@pytest.mark.parametrize(("shape", "message"), [((20, 4), "all zeros"), ((20, 0), "no vectors")])
def test_static_tables_without_vectors_are_refused(
    shape: tuple[int, int], message: str, tiny_bert: Path, tmp_path: Path, capsys: Any
) -> None:
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer

    from sentcl.modeling.static import save_static

    tokenizer = Tokenizer.from_file(str(tiny_bert / "tokenizer.json"))
    table = np.random.default_rng(0).normal(size=(tokenizer.get_vocab_size(), 4)).astype(np.float32)
    folder = save_static(tmp_path / "st", tokenizer, table)
    weights = next(folder.rglob("model.safetensors"))
    save_file({"embedding.weight": np.zeros((tokenizer.get_vocab_size(), shape[1]), np.float32)}, weights)
    assert main(_encode(folder, tmp_path)) == 2
    assert message in _one_error(capsys, "encode")


def _weighted_folder(tiny_bert: Path, tmp_path: Path) -> Path:
    """A weighted static folder (modeling/static_weighted.py) with random tables."""
    from tokenizers import Tokenizer

    from sentcl.modeling.static import save_static
    from sentcl.modeling.static_weighted import WeightedMean

    tokenizer = Tokenizer.from_file(str(tiny_bert / "tokenizer.json"))
    rng = np.random.default_rng(0)
    vocab = tokenizer.get_vocab_size()
    tables = WeightedMean.of(
        rng.normal(size=(vocab, 4)).astype(np.float32),
        rng.normal(size=(vocab, 6)).astype(np.float32),
        rng.normal(size=(vocab, 6)).astype(np.float32),
        np.array([0.3, -0.1, 0.2], dtype=np.float32),
    )
    return save_static(tmp_path / "weighted", tokenizer, tables.table, weighted=tables)


@pytest.mark.parametrize("damage", ["missing", "nan", "one_row", "wide"])
@pytest.mark.parametrize("tensor", ["queries", "keys", "gain", "heads", "qk"])
def test_each_part_of_the_weighted_form_damaged_is_one_line_naming_it(
    tensor: str, damage: str, tiny_bert: Path, tmp_path: Path, capsys: Any
) -> None:
    """Every tensor and metadata entry the weights file holds (read from the file itself), each damaged four
    ways: one error line naming the file and the part, through a real command."""
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file

    from sentcl.modeling.static_weighted import WEIGHTED_FILE

    folder = _weighted_folder(tiny_bert, tmp_path)
    assert main(_encode(folder, tmp_path)) == 0  # the folder as written encodes
    (tmp_path / "o.npy").unlink()
    file = folder / WEIGHTED_FILE
    found = load_file(str(file))
    with safe_open(str(file), "np") as handle:
        metadata = dict(handle.metadata())
    assert set(found) | set(metadata) == {"queries", "keys", "gain", "heads", "qk"}
    if tensor in metadata:  # a count: gone, not a number, one less, doubled
        changed = {"missing": None, "nan": "nan", "one_row": str(int(metadata[tensor]) - 1)}
        changed["wide"] = str(2 * int(metadata[tensor]))
        if changed[damage] is None:
            metadata.pop(tensor)
        else:
            metadata[tensor] = changed[damage]
        save_file(found, str(file), metadata=metadata)
        assert main(_encode(folder, tmp_path)) == 2
        line = _one_error(capsys, "encode")
        assert WEIGHTED_FILE in line and any(part in line for part in ("metadata", "'gain'", "'queries'")), (
            line
        )
        return
    value = found.pop(tensor)
    if damage == "nan":
        found[tensor] = np.where(np.arange(value.size).reshape(value.shape) == 0, np.nan, value).astype(
            np.float32
        )
    elif damage == "one_row":
        found[tensor] = value[:1].copy()
    elif damage == "wide":
        found[tensor] = np.concatenate([value, value], axis=-1)
    save_file(found, str(file), metadata=metadata)
    assert main(_encode(folder, tmp_path)) == 2
    line = _one_error(capsys, "encode")
    assert WEIGHTED_FILE in line and repr(tensor) in line, line


def test_a_cut_weights_file_is_one_line_naming_it(tiny_bert: Path, tmp_path: Path, capsys: Any) -> None:
    from sentcl.modeling.static_weighted import WEIGHTED_FILE

    folder = _weighted_folder(tiny_bert, tmp_path)
    data = (folder / WEIGHTED_FILE).read_bytes()
    (folder / WEIGHTED_FILE).write_bytes(data[: len(data) // 2])
    assert main(_encode(folder, tmp_path)) == 2
    assert f"{WEIGHTED_FILE}: cannot be read" in _one_error(capsys, "encode")
