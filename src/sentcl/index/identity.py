"""What an index's vectors are: the input they came from and the encoder that made them.

* ``input_fingerprint(path)``: size, mtime and sha256 of the first, middle and last MiB of the encoded
  file; ``offsets_digest(offsets)`` hashes one shard's line-offset table. A sharded encode compares both on
  resume (``sentcl.index.shards``): an input edited in place, even to the same byte size, is re-encoded.
* ``model_identity(model, encoder, max_length)``: the model as given, its resolved folder, a content
  fingerprint of the folder (every file's relative path and size, and a hash of its first and last 64 KiB:
  equal for a copy, different for other weights), the pooler, the max length and the Matryoshka truncation.
  The shard manifest and an index's ``index.json`` record it; ``check_encoder`` compares a search's encoder with it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.files.paths import resolve_model_path

MIB = 1 << 20
EDGE = 64 << 10
# the encoder settings a search must share with the index (field -> how it is named in a message)
SETTINGS = {"pooler": "pooler", "max_length": "max length", "truncate_dim": "truncation (truncate_dim)"}
ALLOW_HINT = "pass --allow-model-mismatch to search anyway"


def input_fingerprint(path: Path) -> dict[str, Any]:
    """Size, mtime_ns and sha256 of the first, middle and last MiB of ``path`` (reads at most 3 MiB)."""
    stat = path.stat()
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for at in sorted({0, max(0, stat.st_size // 2 - MIB // 2), max(0, stat.st_size - MIB)}):
            handle.seek(at)
            digest.update(handle.read(MIB))
    return {"bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sample_sha256": digest.hexdigest()}


def offsets_digest(offsets: np.ndarray) -> str:
    """sha256 of a shard's int64 line-offset table."""
    return hashlib.sha256(np.ascontiguousarray(offsets, dtype=np.int64).tobytes()).hexdigest()


def model_fingerprint(model: str) -> str | None:
    """A content fingerprint of the model folder (see the module doc); None when ``model`` is no folder."""
    folder = Path(resolve_model_path(model))
    if not folder.is_dir():
        return None
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        size = path.stat().st_size
        digest.update(f"{path.relative_to(folder).as_posix()}\0{size}\n".encode())
        with open(path, "rb") as handle:
            digest.update(handle.read(EDGE))
            handle.seek(max(0, size - EDGE))
            digest.update(handle.read(EDGE))
    return digest.hexdigest()


def model_identity(model: str, encoder: Any, max_length: int | None) -> dict[str, Any]:
    """The fields a search's encoder must share with an index (module doc)."""
    path = Path(resolve_model_path(model))
    return {
        "model": model,
        "model_path": str(path.resolve()) if path.exists() else model,
        "model_fingerprint": model_fingerprint(model),
        "pooler": getattr(encoder, "pooler", None),
        "max_length": max_length,
        "truncate_dim": getattr(encoder, "truncate_dim", None),
    }


def _model_differs(saved: dict[str, Any], now: dict[str, Any]) -> bool:
    if saved.get("model_fingerprint") and now.get("model_fingerprint"):
        return saved["model_fingerprint"] != now["model_fingerprint"]
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


def check_encoder(where: Path, saved: dict[str, Any], now: dict[str, Any], allow: bool) -> list[str]:
    """Raise ValueError naming both values of every differing field, unless ``allow`` (then return them)."""
    found = mismatches(saved, now)
    if found and not allow:
        raise ValueError(
            f"{where} was built with another encoder: {'; '.join(found)}. Search with the index's model "
            f"and settings (they are in {where / 'index.json'}), or {ALLOW_HINT}"
        )
    return found
