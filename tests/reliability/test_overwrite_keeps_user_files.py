"""``--overwrite`` of a folder sentcl wrote whole: the user's files added since are never deleted (refused,
naming them), a symbolic link to the folder is followed (the linked folder replaced, the link kept, no
temporary left), and a dangling link or a loop is one line naming what it is. Through the real writers: the
static model's ``save_static`` and ``sentcl index build``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sentcl.cli import main
from sentcl.files.output import OutputRefused


@pytest.fixture()
def static_parts(tiny_bert: Path) -> tuple[Any, np.ndarray]:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tiny_bert / "tokenizer.json"))
    return tokenizer, np.random.default_rng(0).normal(size=(tokenizer.get_vocab_size(), 4)).astype(np.float32)


def test_files_added_to_a_model_folder_stop_the_overwrite(tmp_path: Path, static_parts: Any) -> None:
    from sentcl.modeling.static import save_static

    folder = save_static(tmp_path / "st", *static_parts)
    (folder / "MY_EVAL.md").write_text("notes")
    (folder / "mydata").mkdir()
    (folder / "mydata" / "k.txt").write_text("keep")
    with pytest.raises(
        OutputRefused, match=r"2 file\(s\) sentcl did not write there \(MY_EVAL.md, mydata/\)"
    ):
        save_static(folder, *static_parts, overwrite=True)
    assert (folder / "MY_EVAL.md").read_text() == "notes" and (folder / "mydata" / "k.txt").is_file()
    (folder / "MY_EVAL.md").unlink()
    (folder / "mydata" / "k.txt").unlink()
    (folder / "mydata").rmdir()
    save_static(folder, *static_parts, overwrite=True)  # only sentcl's files: replaced


def test_a_link_to_the_folder_is_followed_and_kept(tmp_path: Path, static_parts: Any) -> None:
    from sentcl.modeling.static import save_static

    real = save_static(tmp_path / "real", *static_parts)
    before = (real / "model.safetensors").stat().st_ino if (real / "model.safetensors").exists() else None
    link = tmp_path / "link"
    link.symlink_to("real")
    tokenizer, table = static_parts
    save_static(link, tokenizer, table * 2, overwrite=True)
    assert link.is_symlink() and os.readlink(link) == "real"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]  # no temporary left
    from sentcl.modeling.static import StaticEncoder

    np.testing.assert_allclose(StaticEncoder(real).table, table * 2, rtol=1e-6)
    after = next(real.rglob("model.safetensors")).stat().st_ino
    assert before is None or after != before


def test_index_build_onto_links(tiny_bert: Path, tmp_path: Path, capsys: Any) -> None:
    from helpers.shards import encode_argv

    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"the man plays a guitar {i}\n" for i in range(30)))
    assert main(encode_argv(tiny_bert, corpus, tmp_path / "sh")) == 0
    build = ["index", "build", "--embeddings", str(tmp_path / "sh"), "--type", "flat", "--output"]
    assert main([*build, str(tmp_path / "idx")]) == 0
    (tmp_path / "l_idx").symlink_to("idx")
    (tmp_path / "idx" / "NOTES.md").write_text("mine")
    capsys.readouterr()
    assert main([*build, str(tmp_path / "l_idx"), "--overwrite"]) == 2
    assert "NOTES.md" in capsys.readouterr().err and (tmp_path / "idx" / "NOTES.md").is_file()
    (tmp_path / "idx" / "NOTES.md").unlink()
    assert main([*build, str(tmp_path / "l_idx"), "--overwrite"]) == 0
    assert (tmp_path / "l_idx").is_symlink() and (tmp_path / "idx" / "index.faiss").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
    (tmp_path / "dangling").symlink_to("nowhere")
    (tmp_path / "loopA").symlink_to("loopB")
    (tmp_path / "loopB").symlink_to("loopA")
    for name, message in [("dangling", "symbolic link to nowhere, which does not exist"), ("loopA", "loop")]:
        assert main([*build, str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and message in err, err
