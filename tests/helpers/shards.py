"""The ``sentcl encode`` command line that writes a small shard folder, shared by the index and integrity tests."""

from __future__ import annotations

from pathlib import Path


def encode_argv(model: Path, corpus: Path, out: Path, shard_size: int = 10) -> list[str]:
    """``sentcl encode`` of ``corpus`` with ``model`` into shards of ``shard_size`` lines in ``out``."""
    return ["encode", "--model", str(model), "--input", str(corpus), "--output", str(out)] + [
        "--shard-size",
        str(shard_size),
    ]
