"""sentcl's one input budget (``sentcl.files.budget``): every line reader keeps at most ``LINE_CHARS`` characters
of a line in bounded memory and counts the cut lines in a warning naming the file; every tokenizer call reads at
most ``char_budget(max_length)`` characters of a text. Checked against hand-written splits of the bytes, with
generated files (hypothesis), through the readers of encode, training, pairs and shards, and with a real 32 MB
line encoded under a 1.5 GB address-space limit (reliability row FF_50mb_line_memcap: the tokenizer aborted)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sentcl.files.budget as budget
from sentcl.files.budget import bounded_lines, bounded_texts, char_budget

SRC = Path(__file__).resolve().parents[2] / "src"


def _reference(data: bytes, cap: int) -> list[tuple[bytes, int]]:
    """(kept bytes, spanned bytes) of each line, by hand: split after each b"\\n"; a line whose text (without
    its b"\\n") is over ``cap`` bytes keeps ``cap`` of them, fewer where the first byte dropped continues a
    UTF-8 character, and ends in b"\\n"."""
    out = []
    for line in _split_lf(data):
        text = line.removesuffix(b"\n")
        if len(text) <= cap:
            out.append((line, len(line)))
            continue
        keep = cap
        while keep > 0 and (text[keep] & 0xC0) == 0x80:
            keep -= 1
        out.append((text[:keep] + b"\n", len(line)))
    return out


def _split_lf(data: bytes) -> list[bytes]:
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    return lines + ([parts[-1]] if parts[-1] else [])


_pieces = st.sampled_from(
    [b"a", b"word ", b"\xc3\xa9", b"\xe2\x80\xa8", b"\xf0\x9f\x98\x80", b"\r", b"\x00", b"\n"]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(_pieces, max_size=80), cap=st.integers(4, 24))
def test_bounded_lines_match_a_hand_split_of_the_bytes(
    parts: list[bytes], cap: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = b"".join(parts)
    with monkeypatch.context() as patch:
        patch.setattr(budget, "LINE_BYTES", cap)
        got = list(bounded_lines(io.BytesIO(data), "f.txt"))
    want = _reference(data, cap)
    assert [(raw, used) for _, raw, used in got] == want
    assert [n for n, _, _ in got] == list(range(1, len(want) + 1))
    assert sum(used for _, _, used in got) == len(data)  # every byte accounted: offsets stay true
    for _, raw, _ in got:  # the pieces are valid UTF-8: every kept line decodes (no character is split)
        raw.decode("utf-8")


def test_cut_lines_are_counted_in_one_warning_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from sentcl.data.readers import read_lines
    from sentcl.data.scored_pairs import read_scored_pairs

    monkeypatch.setattr(budget, "LINE_BYTES", 64)
    monkeypatch.setattr(budget, "LINE_CHARS", 16)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("short\n" + "x" * 500 + "\nshort again\n" + "y" * 300 + "\n", encoding="utf-8")
    lines = read_lines(corpus)
    assert [len(t) for t in lines.examples] == [5, 64, 11, 64]
    assert f"{corpus}: 2 line(s) over 16 characters were cut to them (line 2, 4)" in caplog.text
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("a dog\ta cat\t" + "9" * 100 + "\n", encoding="utf-8")
    caplog.clear()
    # a table's row is refused rather than cut: a cut would change its last field (here the score)
    with pytest.raises(ValueError, match=r"pairs\.tsv:1: the line is over 16 characters \(113 bytes\)"):
        read_scored_pairs(pairs)


def test_bounded_texts_keep_the_tokens_the_model_reads(tiny_encoder: Any) -> None:
    tok, limit = tiny_encoder.tokenizer, tiny_encoder.max_length
    text = " ".join(["the of and"] * 5000)  # 50,000 characters, 15,000 tokens
    (cut,) = bounded_texts([text], limit)
    assert len(cut) <= char_budget(limit) < len(text)
    full = tok(text, truncation=True, max_length=limit)["input_ids"]
    assert tok(cut, truncation=True, max_length=limit)["input_ids"] == full


@pytest.mark.slow
def test_a_32_mb_line_encodes_under_a_1_5_gb_memory_limit(
    tmp_path: Path, tiny_bert: Path, tiny_encoder: Any
) -> None:
    """Reliability row FF_50mb_line_memcap: the whole line went to the Rust tokenizer, which aborted (SIGABRT)."""
    words = ["the", "of", "and", "in", "to", "was"]
    line = " ".join(words[i % 6] for i in range(6_000_000))  # 19 MB of 1-token words
    big = tmp_path / "big.txt"
    big.write_text("a short first line\n" + line + line + "\nthe last line\n", encoding="utf-8")
    out = tmp_path / "big.npy"
    limit = 1500 * 2**20
    code = (
        "import resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))\n"
        "from sentcl.cli import main\n"
        f"sys.exit(main(['encode', '--model', {str(tiny_bert)!r}, '--input', {str(big)!r}, '--output', {str(out)!r}]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"{big}: 1 line(s) over 131,072 characters were cut to them (line 2)" in run.stderr
    vectors = np.load(out)  # (3, D)
    # the model reads its first max_length tokens of the line, whatever follows them
    prefix = " ".join(words[i % 6] for i in range(tiny_encoder.max_length + 10))
    from sentcl.modeling.open import load_encoder
    from sentcl.similarity import unit_rows

    want = load_encoder(str(tiny_bert)).encode(
        ["a short first line", prefix, "the last line"]
    )  # as encode loads
    np.testing.assert_allclose(unit_rows(vectors), unit_rows(want), atol=1e-5)
