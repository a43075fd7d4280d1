"""The one place where the service touches the search index format: a folder saved by
``sentcl search --index`` (``sentcl.retrieval.load_index``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def load_search_index(folder: str | Path, embedding_dim: int) -> Any:
    """A loaded index with its texts (``.search(queries (Q, D), k) -> (scores, ids)``, ``.texts``, ``len``).

    Raises FileNotFoundError or ValueError (the command prints them as one line) when the folder is not a
    saved index, has no texts, or was built by a model of another dimension."""
    from sentcl.retrieval import load_index

    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"index folder {folder} does not exist (build it with sentcl search --index)")
    index = load_index(folder)
    if index.texts is None:
        raise ValueError(f"index {folder} has no texts.jsonl: the service returns texts with its hits")
    if index.dim != embedding_dim:
        raise ValueError(
            f"index {folder} holds {index.dim}-dimensional embeddings but the model gives {embedding_dim}:"
            " build the index with the same model"
        )
    return index
