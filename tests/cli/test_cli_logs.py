"""What a command logs at INFO is about the command: no line from a library's install (faiss' CPU build)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def test_a_faiss_search_logs_no_faiss_loader_lines(tmp_path: Path, tiny_bert: Path) -> None:
    """faiss' loader says at INFO which CPU build it tried ("Could not load library with AVX2 support"):
    not shown without --verbose; the search itself still answers."""
    pytest.importorskip("faiss")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a man plays the guitar\nthe dog runs in the garden\nthe stock price falls\n")
    argv = ["search", "--model", str(tiny_bert), "--corpus", str(corpus), "--query", "a dog", "-k", "1"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    quiet = subprocess.run(
        [sys.executable, "-m", "sentcl.cli", *argv, "--index-backend", "faiss"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert "rank" in quiet.stdout and "faiss.loader" not in quiet.stderr and "AVX2" not in quiet.stderr
    loud = subprocess.run(
        [sys.executable, "-m", "sentcl.cli", "--verbose", *argv, "--index-backend", "faiss"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert "faiss.loader" in loud.stderr  # the premise: faiss does log these lines, --verbose shows them
