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
* ``json_digest(payload)``: a short digest of a JSON-able key (cache entry names); ``fields_sha256(mapping,
  keys)`` the full one of chosen fields (a sharded encode's settings).
* ``text_sha256(text)``: the SHA-256 of a string's UTF-8 bytes; ``lines_sha256(lines)`` that of the file the
  lines would make, one a line (a teacher cache's ``texts.txt``), without writing it.
* ``line_offsets_sha256(path, block)``: the SHA-256 of each block of ``block`` lines' offset table (what a
  shard's line range of its input is, in one streamed pass).
* ``shards_fingerprint(manifest)``: what a shard folder holds (``SHARD_KEYS`` of each shard: its line range,
  input and files' SHA-256); an index records it as ``shards_sha256``.
* ``search_fingerprint(model, pooler, max_length, texts)``: the key of ``sentcl search --index``'s saved
  corpus embeddings (its ``fingerprint.json``): the corpus text's SHA-256, and the model's with its settings.

No other module of sentcl calls ``hashlib`` or defines a fingerprint, digest or SHA-256 function
(tests/test_architecture.py checks it): every stored digest is written here, so one change keeps them alike.

Artefacts record their files with ``file_records(folder, names)`` (``{name: {bytes, sha256}}``) and readers
check them with ``verify_records``, which raises ``IntegrityError`` naming the file, both digests and the
fix. The cost (``bench/fingerprint.py``, a 400 MB folder) is in bench/results/records/reliability.md.

The trade-off: a digest taken from the sidecar cache proves only that the file's metadata is unchanged. A
reader whose check used a cached digest says so, once per process (an INFO line naming ``sentcl verify
--full``); ``verify_artefacts(folder, full=True)`` (``sentcl verify --full``) reads every byte of every file
that a record of sentcl's names below a folder, so bit rot under unchanged metadata is seen there.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from sentcl.files.atomic import atomic_write_json
from sentcl.files.budget import read_bounded_line
from sentcl.files.pathcheck import input_file_problem, leaves_folder
from sentcl.files.paths import cache_root, resolve_model_path

BLOCK = 1 << 18
CACHE_DIR = "fingerprints"
#: a JSON file larger than this is no manifest: ``recorded_files`` does not parse it
RECORD_MAX_BYTES = 16 << 20
logger = logging.getLogger(__name__)
_memo: dict[str, tuple[tuple[int, ...], str]] = {}
_HEX64 = re.compile(r"[0-9a-f]{64}")
_from_cache: set[str] = set()  # resolved paths whose last digest came from a cache, not a read
_said: list[bool] = [False]  # the once-per-process line of a check that used cached digests


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
    ok = (
        isinstance(row, dict)
        and row.get("path") == name
        and isinstance(row.get("key"), list)  # a damaged entry (any other value) is no entry
        and tuple(row["key"]) == key
    )
    digest = row.get("sha256") if ok else None
    return digest if isinstance(digest, str) and _HEX64.fullmatch(digest) else None


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
        _from_cache.discard(name)
        if digest is None:
            digest = _hash_file(path)
            if _stat_key(path) == key:  # not written while it was read
                _store(name, key, digest)
        else:
            _from_cache.add(name)
        if _stat_key(path) == key:
            _memo[name] = (key, digest)
        out[path] = digest
    return out


def file_sha256(path: str | os.PathLike[str], cached: bool = True) -> str:
    """The SHA-256 of every byte of ``path`` (the sidecar cache skips an unchanged file)."""
    return files_sha256([Path(path)], cached)[Path(path)]


def tree_files(folder: Path) -> list[Path]:
    """The regular files under ``folder`` in sorted order, hidden paths (a part starting with '.') left out.
    A linked sub-folder is walked too (what a model folder's loading reads through it); a link back to a
    folder above it (a loop) is not."""
    found = []
    above: dict[str, tuple[str, ...]] = {str(folder): (os.path.realpath(folder),)}
    for root, dirs, files in os.walk(folder, followlinks=True):
        chain = above.pop(root, ())
        kept = []
        for d in sorted(d for d in dirs if not d.startswith(".")):
            real = os.path.realpath(os.path.join(root, d))
            if real not in chain:
                kept.append(d)
                above[os.path.join(root, d)] = (*chain, real)
        dirs[:] = kept
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


def fields_sha256(mapping: dict[str, Any], keys: Sequence[str]) -> str:
    """The SHA-256 (64 hex digits) of ``{key: mapping.get(key)}`` for ``keys``, as sorted-key JSON."""
    return json_digest({k: mapping.get(k) for k in keys}, length=64)


def text_sha256(text: str) -> str:
    """The SHA-256 of ``text``'s UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def lines_sha256(lines: Iterable[str]) -> str:
    """The SHA-256 of the UTF-8 file holding ``lines``, each followed by a newline (streamed, nothing written).
    The caller makes each line newline-free (else two lists could make one file)."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8") + b"\n")
    return digest.hexdigest()


def line_offsets_sha256(path: Path, block: int) -> list[str]:
    """``array_sha256`` of the int64 byte-offset table of every ``block`` lines of ``path`` as it is now (one
    streamed pass, bounded memory on any line: ``sentcl.files.budget``); the last block may be shorter."""
    import numpy as np

    out: list[str] = []
    offsets: list[int] = []
    at = 0
    with open(path, "rb") as handle:
        while used := read_bounded_line(handle)[1]:
            offsets.append(at)
            at += used
            if len(offsets) == block:
                out.append(array_sha256(np.asarray(offsets, dtype=np.int64)))
                offsets = []
    if offsets:
        out.append(array_sha256(np.asarray(offsets, dtype=np.int64)))
    return out


#: what ``shards_fingerprint`` covers of each shard record: not paths or mtimes (a moved corpus is the same)
SHARD_KEYS = ("file", "start_line", "end_line", "rows", "offsets_sha256", "input_sha256", "files")


def shards_fingerprint(manifest: dict[str, Any]) -> str:
    """What a shard folder holds now: a digest of the width and of each shard's line range, input and files'
    SHA-256 (``SHARD_KEYS``; not paths or mtimes, so a moved or touched corpus is the same). Shards of an
    older sentcl record no SHA-256: their digest covers the line ranges and offset tables only."""
    shards = [
        {k: rec.get(k) for k in SHARD_KEYS if k in rec} if isinstance(rec, dict) else rec
        for rec in manifest.get("shards", [])
    ]
    return json_digest({"dim": manifest.get("dim"), "shards": shards}, length=64)


def search_fingerprint(
    model: str, pooler: str | None, max_length: int | None, texts: Sequence[str]
) -> dict[str, str]:
    """``sentcl search --index``'s cache key: {"corpus": SHA-256 of the texts joined by newlines, "model":
    SHA-256 of the model's tree fingerprint (its name when it is no folder), a NUL and the settings' JSON}."""
    settings = json.dumps({"pooler": pooler, "max_length": max_length})
    return {
        "corpus": text_sha256("\n".join(texts)),
        "model": text_sha256(f"{model_fingerprint(model) or model}\0{settings}"),
    }


def file_records(folder: Path, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{name: {"bytes": size, "sha256": digest}}`` for files of ``folder`` (what a manifest records)."""
    paths = {name: Path(folder) / name for name in names}
    digests = files_sha256(paths.values())
    return {n: {"bytes": p.stat().st_size, "sha256": digests[p]} for n, p in paths.items()}


def unrecorded(what: str, fix: str) -> str:
    """The one wording for an artefact whose header records no file digests (written by an older sentcl)."""
    return (
        f"{what} records no SHA-256 of its files (written before sentcl recorded them): nothing in it can be "
        f"verified; {fix} to get records"
    )


def verify_records(folder: Path, records: Any, what: str, fix: str, cached: bool = True) -> None:
    """Raise ``IntegrityError`` for the first recorded file that is missing or whose size or SHA-256 differs;
    a name that leads out of ``folder`` (absolute, or with a '..' part) is refused as a crafted record before
    anything is read, and a FIFO, a device or a folder is named as what it is (``files.pathcheck``).

    ``records`` is what ``file_records`` returned, as the manifest (``what``) holds it; a value of another
    shape is itself refused. ``fix`` says what to do (rebuild the index, delete the cache entry, ...).
    ``cached=False`` reads every byte (``sentcl verify --full``); otherwise a digest may come from the
    sidecar cache, and the first such check of the process says so (module doc)."""
    if not isinstance(records, dict) or not all(
        isinstance(r, dict) and isinstance(r.get("sha256"), str) and isinstance(r.get("bytes"), int)
        for r in records.values()
    ):
        raise IntegrityError(f"{what}: its 'files' record is damaged (not name -> bytes, sha256); {fix}")
    for name, rec in records.items():
        if leaves_folder(name):  # never stat or hash what a crafted record names elsewhere on the machine
            raise IntegrityError(
                f"{what} records {name!r}, outside {folder}: refusing a crafted record; {fix}"
            )
        path = Path(folder) / name
        found = input_file_problem(path)  # a FIFO or a device is named as what it is, never read
        if found is not None:
            problem, missing = found
            raise IntegrityError(f"{path} {'is missing' if missing else problem} ({what} records it); {fix}")
        size = path.stat().st_size
        if size != rec["bytes"]:
            how = "is truncated" if size < rec["bytes"] else "has grown"
            raise IntegrityError(f"{path} {how}: it holds {size} bytes, {what} records {rec['bytes']}; {fix}")
        digest = file_sha256(path, cached)
        if cached and not _said[0] and str(path.resolve()) in _from_cache:
            _said[0] = True
            logger.debug(  # once a process, and only with --verbose: not a line on every load
                "%s: checked against the recorded SHA-256; the digest of a file unchanged since it was last "
                "hashed (size, mtime, ctime, inode) comes from the fingerprint cache: run sentcl verify --full "
                "%s to read every byte",
                path,
                folder,
            )
        if digest != rec["sha256"]:
            raise IntegrityError(
                f"{path} changed since it was written: its SHA-256 is {digest[:16]}..., {what} records "
                f"{rec['sha256'][:16]}...; {fix}"
            )


def _records_in(data: Any) -> list[dict[str, Any]]:
    """Every ``files`` record (name -> {bytes, sha256}) anywhere inside a parsed JSON value."""
    found: list[dict[str, Any]] = []
    if isinstance(data, dict):
        files = data.get("files")
        if (
            isinstance(files, dict)
            and files
            and all(isinstance(r, dict) and "sha256" in r for r in files.values())
        ):
            found.append(files)
        for value in data.values():
            found += _records_in(value)
    elif isinstance(data, list):
        for value in data:
            found += _records_in(value)
    return found


def recorded_files(folder: Path) -> dict[Path, dict[str, dict[str, Any]]]:
    """JSON file -> the files its records name (``{name: {bytes, sha256}}``, relative to its folder), for every
    manifest below ``folder`` (hidden paths left out): an index's ``index.json``, a shard manifest and its
    shard records, ``sentcl_onnx.json``, a run summary's record, a teacher cache's entries."""
    out: dict[Path, dict[str, dict[str, Any]]] = {}
    for path in tree_files(Path(folder)):
        if path.suffix != ".json" or path.stat().st_size > RECORD_MAX_BYTES:
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # not sentcl's record (its own readers name a damaged one)
        merged: dict[str, dict[str, Any]] = {}
        for records in _records_in(data):
            merged.update(records)
        if merged:
            out[path] = merged
    return out


def verify_artefacts(folder: Path, full: bool = False) -> tuple[int, int, list[str]]:
    """Check every file a record below ``folder`` names (``recorded_files``), each once: (files, bytes, what is
    wrong with each damaged one). ``full``: read every byte, the fingerprint cache left aside."""
    seen: set[Path] = set()
    count = size = 0
    problems: list[str] = []
    for manifest, records in recorded_files(Path(folder)).items():
        for name, rec in records.items():
            path = (manifest.parent / name).resolve()
            if path in seen:
                continue  # a shard's record is in its sidecar and in the manifest: one check
            seen.add(path)
            try:
                verify_records(manifest.parent, {name: rec}, str(manifest), "", cached=not full)
            except IntegrityError as err:
                problems.append(str(err).removesuffix("; "))
            count += 1
            size += rec.get("bytes", 0) if isinstance(rec.get("bytes"), int) else 0
    return count, size, problems
