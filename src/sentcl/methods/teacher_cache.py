"""Teacher vectors of a training corpus, encoded once and cached on disk (``model.teacher_cache``).

A cache entry is one folder, named by a digest of what its vectors depend on: the teacher's identity
(``sentcl.data.vector_identity.model_identity``'s folder path and content fingerprint), its pooler and max length
as the recipe sets them, the normalisation (none: a folder's own Normalize module applies, as in the student)
and the sha256 of the texts. It holds

- ``texts.txt``: the distinct texts the teacher encodes, one a line, in first-occurrence order over the
  corpus' examples (a line break inside a text is written as a space), written atomically;
- ``vectors/``: the sharded encode of ``texts.txt`` (``sentcl.data.shards.encode_shards``): it resumes after
  a kill and re-encodes an edited input; row r is line r + 1 of ``texts.txt``;
- ``teacher.json``: the key's fields, for a person reading the folder.

Every epoch and every run on the same corpus with the same teacher finds the finished entry and reuses it
(the log says ``teacher vectors: reused <dir>``) without opening the teacher; otherwise the log says
``encoding N sentences with teacher ...``. Nothing is encoded per step.

An entry is sentcl's own, so a damaged one is repaired, never fatal: before reuse every shard is checked
against its record (present, the SHA-256 of its ``.npy`` and offsets, a float32 array of the recorded shape).
A shard that fails (cut, another shape or dtype, NaN written over it, deleted), an unreadable manifest or
shard record, or records that name another folder (the cache was moved or copied) is one warning naming the
file and the problem, and only those shards are encoded again. Two processes that need one entry (two
trainings started together) do not both encode it: the one that encodes holds the entry's lock
(``.<entry>.lock`` beside it, ``sentcl.files.lock``), and the other logs that it waits for that process, then
reuses the finished entry; a killed holder's lock is gone with it. A cache folder that cannot hold entries (a
file, or a path under a file) is a ``ConfigError`` naming ``model.teacher_cache`` or ``$SENTCL_CACHE``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from sentcl import distributed
from sentcl.config.teacher import TeacherConfig
from sentcl.config.typed import ConfigError
from sentcl.data.shard_resume import shard_stem
from sentcl.data.shards import MANIFEST, ShardSet, encode_shards, read_manifest
from sentcl.defaults import ENCODE_BATCH_SIZE, TEACHER_CACHE_SUBDIR
from sentcl.files.atomic import atomic_write, atomic_write_json
from sentcl.files.fingerprint import (
    IntegrityError,
    file_sha256,
    json_digest,
    lines_sha256,
    model_fingerprint,
    verify_records,
)
from sentcl.files.lock import ProcessLock
from sentcl.files.output import model_input, prepare_folder
from sentcl.files.pathcheck import check_output_dir
from sentcl.files.paths import CACHE_ENV, cache_root, resolve_model_path
from sentcl.files.read import load_npy, read_json
from sentcl.methods.teacher_engine import TeacherEngine

logger = logging.getLogger(__name__)
#: the cache entry's layout version (a new layout gets new entries, never misreads old ones); 2: the teacher's
#: fingerprint hashes every byte of its folder (entries of format 1 are not reused: the teacher encodes again)
FORMAT = 2
TEXTS_FILE = "texts.txt"
VECTORS_DIR = "vectors"
#: rows per shard of a teacher encode: the unit that a resumed encode skips
TEACHER_SHARD_SIZE = 10_000


def teacher_cache_dir(configured: str | None) -> Path:
    """``model.teacher_cache``, else ``$SENTCL_CACHE/teachers``, else ``~/.cache/sentcl/teachers``; a path
    that cannot be a folder (a file, or under a file) is a ``ConfigError`` naming where it came from, and a
    folder that refuses a new file fails here (``check_output_dir``), before any teacher is opened."""
    import os

    if configured is not None:
        folder, source = Path(configured).expanduser(), "model.teacher_cache"
    else:
        folder = cache_root(None) / TEACHER_CACHE_SUBDIR
        source = f"${CACHE_ENV}" if os.environ.get(CACHE_ENV) else "the default cache folder"
    for above in (folder, *folder.parents):
        if above.is_dir():
            break
        if os.path.lexists(above):
            where = "is a file" if above == folder else f"lies under {above}, which is a file"
            raise ConfigError(
                f"{source}: the teacher cache {folder} {where}, not a folder; the cache is a folder of "
                "entries: name a folder"
            )
    check_output_dir(folder, f"the teacher cache ({source})")
    return folder


def line_safe(text: str) -> str:
    """A text as one line of ``texts.txt``: line breaks become spaces (whitespace to every tokenizer)."""
    return text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


def distinct_texts(texts: Sequence[str]) -> tuple[list[str], dict[str, int]]:
    """(the distinct texts in first-occurrence order, text -> its row)."""
    rows: dict[str, int] = {}
    for text in texts:
        rows.setdefault(text, len(rows))
    return list(rows), rows


def _write_lines(handle: IO[bytes], texts: Sequence[str]) -> None:
    for text in texts:
        handle.write(line_safe(text).encode("utf-8") + b"\n")


@dataclass(frozen=True)
class CacheKey:
    """What a teacher's vectors depend on; its digest names the cache entry."""

    model: str
    model_path: str
    model_fingerprint: str | None
    pooler: str | None
    max_length: int | None
    normalize: bool
    texts_sha256: str
    format: int = FORMAT

    @classmethod
    def of(cls, teacher: TeacherConfig, texts_sha256: str) -> CacheKey:
        path = Path(resolve_model_path(teacher.path))
        where = str(path.resolve()) if path.exists() else teacher.path
        return cls(  # the folder, not how it was named: a short name and its path share one entry
            model=where,
            model_path=where,
            model_fingerprint=model_fingerprint(teacher.path),
            pooler=teacher.pooler,
            max_length=teacher.max_length,
            normalize=False,
            texts_sha256=texts_sha256,
        )

    def entry_name(self) -> str:
        """The cache entry's folder name: ``json_digest`` of every field."""
        return json_digest(asdict(self))


def _shard_problem(vectors: Path, rec: Any, dim: int) -> str | None:
    """What is wrong with one finished shard of an entry against its record, or None when it holds it."""
    if (
        not isinstance(rec, dict)
        or not isinstance(rec.get("file"), str)
        or not isinstance(rec.get("rows"), int)
    ):
        return f"{vectors / MANIFEST}: a shard record is damaged ({str(rec)[:60]})"
    path = vectors / rec["file"]
    if not path.is_file():
        return f"{path} is missing"
    try:
        if "files" in rec:  # its .npy and offsets, every byte (sentcl.files.fingerprint)
            verify_records(vectors, rec["files"], "the cache", "")
        arr = load_npy(path)
    except (IntegrityError, ValueError, OSError) as err:
        return str(err).removesuffix("; ").removesuffix("; re-create it")
    if arr.shape != (rec["rows"], dim) or arr.dtype != np.float32:
        return f"{path} holds a {arr.dtype} array of shape {arr.shape}, its record says ({rec['rows']}, {dim}) float32"
    return None


def entry_problems(vectors: Path, rows: int) -> dict[str, str] | None:
    """None when the entry's encode is not finished (it resumes); else file -> what is wrong with it, for
    every damaged part (``{}``: the entry is sound and reused). Reads only."""
    if not (vectors / MANIFEST).is_file():
        return None
    try:
        if not read_manifest(vectors)["complete"]:
            return None  # a killed encode: resumed
        manifest = ShardSet.open(vectors).manifest
    except ValueError as err:  # unreadable, not a shard manifest, records not contiguous
        return {MANIFEST: str(err)}
    if manifest["rows"] != rows:
        return {
            MANIFEST: f"{vectors / MANIFEST} records {manifest['rows']} rows, the corpus has {rows} texts"
        }
    found = {}
    for i, rec in enumerate(manifest["shards"]):
        if (why := _shard_problem(vectors, rec, manifest["dim"])) is not None:
            found[f"{shard_stem(i)}.json"] = why
    return found


def _records_elsewhere(vectors: Path, texts: Path) -> list[str]:
    """The shard records (and manifest) that name another input than this entry's ``texts.txt`` (the cache
    was moved or copied) or cannot be read: a resume would refuse them, so their shards are encoded again."""
    here = str(texts.resolve())
    stale = []
    for record in sorted(vectors.glob("shard-*.json")):
        try:
            rec = read_json(record, what="shard record")
            settings = rec.get("settings") if isinstance(rec, dict) else None
            elsewhere = not isinstance(settings, dict) or settings.get("input") != here
        except ValueError:
            elsewhere = True
        if elsewhere:
            stale.append(record.name)
    try:
        if (vectors / MANIFEST).is_file() and read_json(vectors / MANIFEST, what="").get("input") != here:
            stale.append(MANIFEST)
    except (ValueError, AttributeError):
        stale.append(MANIFEST)  # unreadable: the shards' own records say what they hold
    return stale


def repair_entry(entry: Path, problems: dict[str, str]) -> None:
    """Forget the damaged parts of sentcl's own entry (each named in one warning) so that the encode that
    follows encodes their shards again; the sound shards are kept (module doc). Rank 0 only."""
    vectors = entry / VECTORS_DIR
    for name, why in problems.items():
        again = (
            "its shard is encoded again" if name != MANIFEST else "the shards' own records are read instead"
        )
        logger.warning("teacher cache: %s; %s", why, again)
        (vectors / name).unlink(missing_ok=True)
    moved = _records_elsewhere(vectors, entry / TEXTS_FILE)
    if moved:
        logger.warning(
            "teacher cache: %d record(s) in %s name another folder (the cache was moved or copied); their "
            "shards are encoded again",
            len(moved),
            vectors,
        )
    for name in moved:
        (vectors / name).unlink(missing_ok=True)


def _write_texts(path: Path, texts: Sequence[str], sha256: str) -> None:
    """``texts.txt`` as the key says (an edited or damaged one is said and written again)."""
    if path.is_file():
        if file_sha256(path) == sha256:
            return
        logger.warning("teacher cache: %s is not the text the entry is named for; writing it again", path)
    atomic_write(path, lambda f: _write_lines(f, texts))


def open_teacher(teacher: TeacherConfig, device: str | None = None) -> Any:  # noqa: ANN401 - an Encoder
    """The teacher as an ``Encoder`` (``open_model``), in eval mode, on ``device`` when it is a torch model."""
    from sentcl.modeling.open import open_model

    encoder = open_model(teacher.path, pooler=teacher.pooler)
    if device is not None and hasattr(encoder, "to"):
        encoder = encoder.to(device)
    if hasattr(encoder, "eval"):
        encoder.eval()
    return encoder


def teacher_vectors(
    teacher: TeacherConfig,
    texts: Sequence[str],
    cache_dir: Path,
    *,
    device: str | None = None,
    shard_size: int = TEACHER_SHARD_SIZE,
    batch_size: int = ENCODE_BATCH_SIZE,
    engine: TeacherEngine | None = None,
) -> ShardSet:
    """The teacher's vectors of ``texts`` (distinct, in row order): reused from the cache, or encoded into it,
    in process or on ``engine`` (``model.teacher_engine``: ``sentcl.methods.teacher_engine``)."""
    key = CacheKey.of(teacher, lines_sha256(map(line_safe, texts)))
    entry = cache_dir / key.entry_name()
    vectors = entry / VECTORS_DIR
    if entry_problems(vectors, len(texts)) == {}:
        return _reused(entry, teacher, len(texts))
    lock = _entry_lock(cache_dir, entry) if distributed.rank() == 0 else None
    try:
        distributed.barrier()  # rank 0 holds the entry: no other process encodes into it now
        problems = entry_problems(vectors, len(texts))
        if problems == {}:  # another process finished it while this one waited
            return _reused(entry, teacher, len(texts))
        return _encode_entry(teacher, texts, entry, key, problems, device, shard_size, batch_size, engine)
    finally:
        if lock is not None:
            lock.release()


def _reused(entry: Path, teacher: TeacherConfig, rows: int) -> ShardSet:
    logger.info("teacher vectors: reused %s (%d sentences, teacher %s)", entry, rows, teacher.path)
    return ShardSet.open(entry / VECTORS_DIR)


def _entry_lock(cache_dir: Path, entry: Path) -> ProcessLock:
    """The entry's lock (``.<entry>.lock`` beside it): a second process that needs the same vectors waits for
    the one encoding them, then reuses them (two encodes into one folder would each find the other's files)."""

    def waiting(holder: str) -> None:
        logger.info("teacher cache: process %s is encoding %s; waiting for it to finish", holder, entry)

    path = cache_dir / f".{entry.name}.lock"
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        return ProcessLock(path, wait=True, waiting=waiting)
    except OSError as err:
        raise ConfigError(f"the teacher cache {cache_dir} cannot be written: {err.strerror or err}") from None


def _encode_entry(
    teacher: TeacherConfig,
    texts: Sequence[str],
    entry: Path,
    key: CacheKey,
    problems: dict[str, str] | None,
    device: str | None,
    shard_size: int,
    batch_size: int,
    engine: TeacherEngine | None,
) -> ShardSet:
    """Encode (or finish, or repair) the entry; rank 0 holds its lock."""
    vectors = entry / VECTORS_DIR
    distributed.barrier()  # every rank has looked before rank 0 repairs
    if distributed.rank() == 0:
        prepare_folder(
            entry, "teacher-cache", "model.teacher_cache", model_input(teacher.path, "model.teacher")
        )
        if vectors.is_dir():  # sentcl's own entry (prepare_folder checked its marker): its damage is repaired
            repair_entry(entry, problems or {})
        atomic_write_json(entry / "teacher.json", asdict(key))
        _write_texts(entry / TEXTS_FILE, texts, key.texts_sha256)
    distributed.barrier()  # texts.txt is on disk for every rank
    if engine is not None and not engine.in_process:
        logger.info("encoding %d sentences with teacher %s into %s on the %s engine", len(texts), teacher.path,
                    entry, engine.name)  # fmt: skip
        if distributed.rank() == 0:  # the engine's workers share the encode; the other ranks wait
            engine.encode_shards(teacher, entry / TEXTS_FILE, vectors, shard_size, batch_size)
        distributed.barrier()  # the shards and the manifest are on disk
        return ShardSet.open(vectors)
    logger.info("encoding %d sentences with teacher %s into %s", len(texts), teacher.path, entry)
    try:
        encoder = open_teacher(teacher, device)
    except (OSError, ValueError) as err:
        raise ConfigError(f"model.teacher: {teacher.path} cannot be opened as a teacher: {err}") from err
    encode_shards(
        encoder,
        entry / TEXTS_FILE,
        vectors,
        shard_size,
        model_name=teacher.path,
        batch_size=batch_size,
        max_length=teacher.max_length,
        normalize=False,
    )
    return ShardSet.open(vectors)
