"""What an index's vectors are: the input they came from and the encoder that made them.

``model_identity(model, encoder, max_length)``: the model as given, its resolved folder, ``model_sha256``
(``sentcl.files.fingerprint.model_fingerprint``: every byte of every file of the folder; equal for a copy,
different for any changed weight), the pooler, the max length and the Matryoshka truncation. The shard
manifest and an index's ``index.json`` record it; ``check_encoder`` compares a search's encoder with it. An index or
shard folder written before ``model_sha256`` existed holds ``model_fingerprint`` (a sampled hash): it is
compared by the model's resolved path instead.

``sentcl.files.fingerprint.shards_fingerprint(manifest)`` is what a shard folder holds; an index's
``index.json`` records it as ``shards_sha256`` and ``check_shards`` refuses shards that changed since (re-encoded after an edit).
``verify_index_files`` checks the SHA-256 of ``index.faiss`` and ``rows.npy`` that ``index.json`` records: bit
rot is refused, not served as a cosine of 1e37.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from sentcl.files.fingerprint import (
    IntegrityError,
    model_fingerprint,
    shards_fingerprint,
    unrecorded,
    verify_records,
)
from sentcl.files.paths import resolve_model_path

logger = logging.getLogger(__name__)

# the encoder settings a search must share with the index (field -> how it is named in a message)
SETTINGS = {"pooler": "pooler", "max_length": "max length", "truncate_dim": "truncation (truncate_dim)"}
ALLOW_HINT = "pass --allow-model-mismatch to search anyway"


def model_identity(model: str, encoder: Any, max_length: int | None) -> dict[str, Any]:
    """The fields a search's encoder must share with an index (module doc)."""
    path = Path(resolve_model_path(model))
    return {
        "model": model,
        "model_path": str(path.resolve()) if path.exists() else model,
        "model_sha256": model_fingerprint(model),
        "pooler": getattr(encoder, "pooler", None),
        "max_length": max_length,
        "truncate_dim": getattr(encoder, "truncate_dim", None),
    }


def _model_differs(saved: dict[str, Any], now: dict[str, Any]) -> bool:
    if saved.get("model_sha256") and now.get("model_sha256"):
        return saved["model_sha256"] != now["model_sha256"]
    if saved.get("model_path") and now.get("model_path"):
        return saved["model_path"] != now["model_path"]
    return saved.get("model") != now.get("model")


def mismatches(saved: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """One phrase per field where ``now`` (a search's encoder) differs from ``saved`` (the index's)."""
    out = []
    if _model_differs(saved, now):
        out.append(
            f"model: the index was encoded with {saved.get('model')!r} ({saved.get('model_path')}), "
            f"the search uses {now.get('model')!r} ({now.get('model_path')})"
        )
    for key, name in SETTINGS.items():
        if key not in saved:  # an index written before this field was recorded
            continue
        if key == "max_length" and now.get(key) is None:
            continue  # the search takes the index's
        if saved.get(key) != now.get(key):
            out.append(f"{name}: the index's is {saved.get(key)!r}, the search's {now.get(key)!r}")
    return out


def dim_mismatch(where: object, held: int, meta: dict[str, Any], model: str, dim: int) -> str:
    """The one wording of an index (``where``, holding ``held``-dimensional vectors) searched with embeddings
    of another width: the truncation to pass when the index records one, else the model to search with."""
    truncate = meta.get("truncate_dim")
    fix = (
        f"the index was encoded with --truncate-dim {truncate}: pass --truncate-dim {truncate} (or leave it out: "
        "the index's own is applied)"
        if isinstance(truncate, int) and truncate != dim
        else "search with the model that encoded the corpus"
    )
    return (
        f"{where}: the index holds {held}-dimensional vectors (model {meta.get('model')!r}) but {model} gives "
        f"{dim}-dimensional embeddings; {fix}"
    )


def recorded_truncate_dim(meta: dict[str, Any]) -> int | None:
    """The Matryoshka truncation an index's vectors were encoded with (its header's ``truncate_dim``), or None."""
    value = meta.get("truncate_dim")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def check_encoder(where: Path, saved: dict[str, Any], now: dict[str, Any], allow: bool) -> list[str]:
    """Raise ValueError naming both values of every differing field, unless ``allow`` (then return them)."""
    found = mismatches(saved, now)
    if found and not allow:
        raise ValueError(
            f"{where} was built with another encoder: {'; '.join(found)}. Search with the index's model "
            f"and settings (they are in {where / 'index.json'}), or {ALLOW_HINT}"
        )
    return found


def check_shards(index: Path, meta: dict[str, Any], manifest: dict[str, Any]) -> None:
    """Refuse shards that changed since the index at ``index`` was built from them (re-encoded, edited):
    its ids would name other sentences. An index of an older sentcl records no fingerprint: not checked."""
    saved = meta.get("shards_sha256")
    if saved is not None and saved != shards_fingerprint(manifest):
        raise IntegrityError(
            f"{index}: the embeddings in {meta.get('embeddings')} changed since this index was built from them "
            "(re-encoded or edited), so its ids would name other sentences; rebuild it: sentcl index build "
            f"--embeddings {meta.get('embeddings')} --type {meta.get('type')} --output NEW_FOLDER"
        )


def verify_index_files(index: Path, meta: dict[str, Any], meta_file: str, only: str | None = None) -> None:
    """Check the SHA-256 of the index's files against ``index.json``'s record (none in an older index);
    ``only``: that file alone (``index.faiss``, before faiss parses it: a damaged header can make faiss
    allocate without bound)."""
    files = meta.get("files")
    if only is not None:
        if not isinstance(files, dict) or only not in files:
            return  # a damaged or older record: the whole check names it
        files = {only: files[only]}
    if "files" in meta:
        verify_records(index, files, str(index / meta_file), "rebuild the index with sentcl index build")
    elif only is None:  # opened all the same (an older index), but not as if it had been checked
        logger.warning(unrecorded(str(index / meta_file), "rebuild the index with sentcl index build"))
