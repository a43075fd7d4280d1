"""``sentcl search``: the k corpus sentences nearest to each query by cosine, cos(q, c) = q·c / (‖q‖‖c‖).

The corpus is a text file, one sentence a line (line numbers are reported; blank lines are skipped and
counted in a warning). ``--index DIR`` keeps the corpus embeddings (``sentcl.index.exact``'s saved index)
with ``fingerprint.json`` (``sentcl.files.fingerprint.search_fingerprint``): sha256 of the corpus text, and of the model (every
byte of its files; pooler, max length). A saved index whose fingerprint differs, or whose files are
unreadable or no longer match the corpus rows or the model's dim, is rebuilt (with a warning naming it).
An ``--index DIR`` built by ``sentcl index build`` (``index.json`` of a faiss type) is searched as is: ``run_ann_search``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.data.readers import read_sentences as read_text_sentences
from sentcl.data.vector_identity import recorded_truncate_dim
from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.files.atomic import dumps_strict
from sentcl.files.fingerprint import search_fingerprint
from sentcl.files.shown import shown
from sentcl.index.exact import SearchIndex, build_index, load_index

logger = logging.getLogger(__name__)
FINGERPRINT_FILE = "fingerprint.json"


@dataclass(frozen=True)
class Hit:
    rank: int
    score: float
    line: int
    text: str


def read_sentences(path: Path, what: str) -> tuple[list[int], list[str]]:
    """(line numbers, sentences) of a text file; blank lines are skipped with a warning that counts them."""
    found = read_text_sentences(path, f"{what} file", require_one=True)
    if found.blank_lines:
        logger.warning("%s: %d blank line(s) skipped", path, found.blank_lines)
    return found.linenos, found.texts


def _read_saved_key(path: Path) -> dict[str, Any] | None:
    """The saved fingerprint, or None (with a warning naming the file) when it is not a JSON object."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        logger.warning("%s is not valid JSON (%s); rebuilding the index", path, err)
        return None
    if not isinstance(saved, dict):
        logger.warning("%s is not a JSON object; rebuilding the index", path)
        return None
    return saved


def _valid_cache(index_dir: Path, backend: str, rows: int, encoder: Any) -> SearchIndex | None:
    """The cached index if it loads and matches the corpus rows and the model's dim; else None (warned)."""
    try:
        index = load_index(index_dir, backend)
    except (ValueError, KeyError, OSError) as err:
        logger.warning("cached index %s is unreadable (%s); rebuilding it", index_dir, err)
        return None
    dim = getattr(encoder, "embedding_dim", index.dim)
    if len(index) != rows or index.dim != dim:
        logger.warning(
            "cached index %s holds %d x %d embeddings but the corpus has %d sentences and the model %d "
            "dimensions; rebuilding it",
            index_dir / "embeddings.npy",
            len(index),
            index.dim,
            rows,
            dim,
        )
        return None
    return index


def corpus_index(
    encoder: Any,
    model_fp: dict[str, str],
    texts: Sequence[str],
    index_dir: Path | None,
    backend: str = "auto",
    batch_size: int = ENCODE_BATCH_SIZE,
    max_length: int | None = None,
) -> tuple[SearchIndex, bool]:
    """The corpus index (reused from ``index_dir`` when its fingerprint matches); (index, built now?)."""
    fp_file = index_dir / FINGERPRINT_FILE if index_dir is not None else None
    if fp_file is not None and fp_file.is_file():
        saved = _read_saved_key(fp_file)
        if saved == model_fp:
            cached = _valid_cache(index_dir, backend, len(texts), encoder)  # type: ignore[arg-type]
            if cached is not None:
                return cached, False
        elif saved is not None:
            changed = " and ".join(k for k in ("corpus", "model") if saved.get(k) != model_fp[k])
            logger.info("%s: the %s changed; rebuilding the index", index_dir, changed)
    emb = encoder.encode(list(texts), batch_size=batch_size, max_length=max_length, show_progress=True)
    index = build_index(np.asarray(emb), backend, texts=list(texts))
    if index_dir is not None and fp_file is not None:
        fp_file.unlink(missing_ok=True)  # an interrupted save leaves no valid fingerprint behind
        index.save(index_dir)
        fp_file.write_text(dumps_strict(model_fp) + "\n", encoding="utf-8")
    return index, True


def load_search_encoder(
    model: str, pooler: str | None, model_backend: str = "auto", truncate_dim: int | None = None
) -> Any:
    """The query/corpus encoder: onnxruntime for an exported folder (unless torch is asked), else torch;
    ``truncate_dim``: the Matryoshka prefix an index's vectors were encoded with."""
    from sentcl.modeling.open import open_model

    return open_model(model, pooler=pooler, backend=model_backend, truncate_dim=truncate_dim)


def run_ann_search(
    model: str,
    index_dir: Path,
    queries: Sequence[str],
    k: int = 5,
    pooler: str | None = None,
    batch_size: int = ENCODE_BATCH_SIZE,
    max_length: int | None = None,
    model_backend: str = "auto",
    nprobe: int | None = None,
    ef_search: int | None = None,
    refine: int | None = None,
    allow_model_mismatch: bool = False,
) -> list[list[Hit]]:
    """Top-k hits per query from an index built by ``sentcl index build`` (texts read from its input).

    The model is loaded with ``pooler`` or its own (never the index's) and the index's truncation
    (``truncate_dim``) where it records one; its identity, pooler, max length and truncation must equal the
    index's manifest unless ``allow_model_mismatch``."""
    from sentcl.index import open_index

    if not queries:
        raise ValueError("no query: give --query TEXT and/or --queries FILE")
    index = open_index(index_dir, nprobe=nprobe, ef_search=ef_search, refine=refine)
    truncate_dim = recorded_truncate_dim(index.meta)  # the index's own, as its max length is taken
    if truncate_dim is not None:
        logger.info(
            "%s was encoded with --truncate-dim %d: the queries are truncated alike", index_dir, truncate_dim
        )
    encoder = load_search_encoder(model, pooler, model_backend, truncate_dim)
    index.check_encoder(model, encoder, max_length, allow_model_mismatch)
    q = encoder.encode(
        list(queries), batch_size=batch_size, max_length=max_length or index.meta.get("max_length")
    )
    scores, ids = index.search(np.asarray(q), k)  # (Q, k), (Q, k); id -1 = fewer than k found
    hits = []
    for srow, irow in zip(scores, ids, strict=True):
        found = [(float(s), int(i)) for s, i in zip(srow, irow, strict=True) if i >= 0]
        texts = index.texts([i for _, i in found])
        hits.append(
            [
                Hit(r + 1, s, line, text)
                for r, ((s, _), line, text) in enumerate(
                    zip(found, index.lines([i for _, i in found]), texts, strict=True)
                )
            ]
        )
    return hits


def run_search(
    model: str,
    corpus: Path,
    queries: Sequence[str],
    k: int = 5,
    index_dir: Path | None = None,
    backend: str = "auto",
    pooler: str | None = None,
    batch_size: int = ENCODE_BATCH_SIZE,
    max_length: int | None = None,
    model_backend: str = "auto",
) -> tuple[list[list[Hit]], bool]:
    """Top-k hits per query; second value: whether the index was built (not reused)."""
    if k < 1:
        raise ValueError(f"-k must be >= 1, got {k}")
    if not queries:
        raise ValueError("no query: give --query TEXT and/or --queries FILE")
    if index_dir is not None and index_dir.exists() and not index_dir.is_dir():
        raise ValueError(f"--index {index_dir} is a file; give a folder to keep the corpus embeddings in")
    line_numbers, texts = read_sentences(corpus, "corpus")
    encoder = load_search_encoder(model, pooler, model_backend)
    fp = search_fingerprint(model, pooler, max_length, texts)
    index, built = corpus_index(encoder, fp, texts, index_dir, backend, batch_size, max_length)
    q = encoder.encode(list(queries), batch_size=batch_size, max_length=max_length)
    scores, ids = index.search(np.asarray(q), k)  # (Q, k), (Q, k)
    hits = [
        [
            Hit(r + 1, float(s), line_numbers[int(i)], texts[int(i)])
            for r, (s, i) in enumerate(zip(srow, irow, strict=True))
        ]
        for srow, irow in zip(scores, ids, strict=True)
    ]
    return hits, built


def format_hits(queries: Sequence[str], hits: Sequence[Sequence[Hit]]) -> str:
    """A readable table per query: rank, cosine, corpus line, sentence."""
    parts = []
    for query, rows in zip(queries, hits, strict=True):
        lines = [f"query: {shown(query)}", f"{'rank':>4}  {'cosine':>7}  {'line':>6}  sentence"]
        lines += [f"{h.rank:>4}  {h.score:>7.4f}  {h.line:>6}  {shown(h.text)}" for h in rows]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def hits_json(queries: Sequence[str], hits: Sequence[Sequence[Hit]]) -> list[dict[str, Any]]:
    return [
        {
            "query": q,
            "hits": [{"rank": h.rank, "score": h.score, "line": h.line, "text": h.text} for h in rows],
        }
        for q, rows in zip(queries, hits, strict=True)
    ]
