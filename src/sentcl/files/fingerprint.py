"""Fingerprints, one home: what a file, a folder, a model or an array holds, as SHA-256 of every byte.

One name per kind of fingerprint:

* ``file_sha256(path)``: the SHA-256 of every byte of one file, read in 256 KiB blocks. A sidecar cache
  (``$SENTCL_CACHE/fingerprints/``, else ``~/.cache/sentcl/fingerprints/``: one small JSON entry per file,
  named by a hash of its resolved path) keyed by the path, size, ``mtime_ns``, ``ctime_ns`` and inode keeps
  a second call on an unchanged file to a stat() and one small read. Any write
  (even one that restores the mtime with ``touch``) changes ``ctime_ns``, so it is hashed again; a bit flip
  that changes no metadata (media rot) is only seen by a cold hash (``cached=False``).
* ``tree_fingerprint(folder)``: SHA-256 over (relative path, file SHA-256) of every regular file under the
  folder, hidden paths (``.git``, ``.sentcl``, ``.cache``) left out.
* ``model_fingerprint(model)``: the tree fingerprint of a model folder (after short names resolve), None for
  a name that is no folder (a hub id). Equal for a copy, different for any changed byte of any file.
* ``input_fingerprint(path)``: a text input's size, mtime and SHA-256.
* ``array_sha256(array)``: the SHA-256 of an array's bytes (a shard's line-offset table).
* ``json_digest(payload)``: a short digest of a JSON-able key (cache entry names).

Artefacts record their files with ``file_records(folder, names)`` (``{name: {bytes, sha256}}``) and readers
check them with ``verify_records``, which raises ``IntegrityError`` naming the file, both digests and the
fix. The cost (``bench/fingerprint.py``, a 400 MB folder) is in docs/reliability.md.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sentcl.files.atomic import atomic_write_json
from sentcl.files.paths import cache_root, resolve_model_path

BLOCK = 1 << 18
CACHE_DIR = "fingerprints"
_memo: dict[str, tuple[tuple[int, ...], str]] = {}


class IntegrityError(ValueError):
    """A file an artefact recorded no longer holds what was recorded (changed, cut or damaged)."""


def _stat_key(path: Path) -> tuple[int, ...]:
    st = path.stat()
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _entry(name: str) -> Path:
    """The sidecar cache's entry of one resolved path: a tiny JSON file named by a hash of the path."""
    return cache_root() / CACHE_DIR / f"{hashlib.sha256(name.encode()).hexdigest()[:32]}.json"


def _cached(name: str, key: tuple[int, ...]) -> str | None:
    """The recorded digest of ``name`` when its entry matches ``key`` (size, mtime, ctime, inode), else None."""
    try:
        row = json.loads(_entry(name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(row, dict) and row.get("path") == name and tuple(row.get("key", ())) == key
    return str(row["sha256"]) if ok and isinstance(row.get("sha256"), str) else None


def _store(name: str, key: tuple[int, ...], digest: str) -> None:
    """Record a digest; a cache that cannot be written only makes the next call slower."""
    try:
        _entry(name).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(_entry(name), {"path": name, "key": list(key), "sha256": digest}, indent=None)
    except OSError:
        pass


def _hash_file(path: Path) -> str:
    """SHA-256 read through one reused 256 KiB buffer (no allocation per block: the resident set stays put)."""
    digest = hashlib.sha256()
    buffer = memoryview(bytearray(BLOCK))
    with open(path, "rb", buffering=0) as handle:
        while n := handle.readinto(buffer):
            digest.update(buffer[:n])
    return digest.hexdigest()


def files_sha256(paths: Iterable[Path], cached: bool = True) -> dict[Path, str]:
    """The SHA-256 of each file (module doc): from the sidecar cache when its entry matches, else read."""
    out: dict[Path, str] = {}
    for path in map(Path, paths):
        name = str(path.resolve())
        key = _stat_key(path)
        hit = _memo.get(name)
        digest = hit[1] if cached and hit is not None and hit[0] == key else None
        if digest is None and cached:
            digest = _cached(name, key)
        if digest is None:
            digest = _hash_file(path)
            if _stat_key(path) == key:  # not written while it was read
                _store(name, key, digest)
        if _stat_key(path) == key:
            _memo[name] = (key, digest)
        out[path] = digest
    return out


def file_sha256(path: str | os.PathLike[str], cached: bool = True) -> str:
    """The SHA-256 of every byte of ``path`` (the sidecar cache skips an unchanged file)."""
    return files_sha256([Path(path)], cached)[Path(path)]


def tree_files(folder: Path) -> list[Path]:
    """The regular files under ``folder`` in sorted order, hidden paths (a part starting with '.') left out."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [Path(root) / f for f in files if not f.startswith(".")]
    return sorted(p for p in found if p.is_file())


def tree_fingerprint(folder: str | os.PathLike[str], cached: bool = True) -> str:
    """SHA-256 over every (relative path, SHA-256) of the folder's regular files (hidden ones left out)."""
    folder = Path(folder)
    digests = files_sha256(tree_files(folder), cached)
    outer = hashlib.sha256()
    for path, digest in digests.items():
        outer.update(f"{path.relative_to(folder).as_posix()}\0{digest}\n".encode())
    return outer.hexdigest()


def model_fingerprint(model: str) -> str | None:
    """The tree fingerprint of a model folder; None when ``model`` is no folder (a hub id, a bad name)."""
    folder = Path(resolve_model_path(model))
    return tree_fingerprint(folder) if folder.is_dir() else None


def input_fingerprint(path: Path) -> dict[str, Any]:
    """A text input's size, mtime_ns and SHA-256 of every byte."""
    stat = Path(path).stat()
    return {"bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": file_sha256(path)}


def array_sha256(array: Any) -> str:
    """SHA-256 of a C-contiguous array's bytes (an int64 offset table; the caller fixes the dtype)."""
    import numpy as np

    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def json_digest(payload: Any, length: int = 24) -> str:
    """The first ``length`` hex digits of the SHA-256 of ``payload`` as sorted-key JSON."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()[:length]


def file_records(folder: Path, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{name: {"bytes": size, "sha256": digest}}`` for files of ``folder`` (what a manifest records)."""
    paths = {name: Path(folder) / name for name in names}
    digests = files_sha256(paths.values())
    return {n: {"bytes": p.stat().st_size, "sha256": digests[p]} for n, p in paths.items()}


def verify_records(folder: Path, records: Any, what: str, fix: str) -> None:
    """Raise ``IntegrityError`` for the first recorded file that is missing or whose size or SHA-256 differs.

    ``records`` is what ``file_records`` returned, as the manifest (``what``) holds it; a value of another
    shape is itself refused. ``fix`` says what to do (rebuild the index, delete the cache entry, ...)."""
    if not isinstance(records, dict) or not all(
        isinstance(r, dict) and isinstance(r.get("sha256"), str) and isinstance(r.get("bytes"), int)
        for r in records.values()
    ):
        raise IntegrityError(f"{what}: its 'files' record is damaged (not name -> bytes, sha256); {fix}")
    for name, rec in records.items():
        path = Path(folder) / name
        if not path.is_file():
            raise IntegrityError(f"{path} is missing ({what} records it); {fix}")
        size = path.stat().st_size
        if size != rec["bytes"]:
            how = "is truncated" if size < rec["bytes"] else "has grown"
            raise IntegrityError(f"{path} {how}: it holds {size} bytes, {what} records {rec['bytes']}; {fix}")
        digest = file_sha256(path)
        if digest != rec["sha256"]:
            raise IntegrityError(
                f"{path} changed since it was written: its SHA-256 is {digest[:16]}..., {what} records "
                f"{rec['sha256'][:16]}...; {fix}"
            )
