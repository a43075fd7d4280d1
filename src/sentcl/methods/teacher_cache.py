"""Teacher vectors of a training corpus, encoded once and cached on disk (``model.teacher_cache``).

A cache entry is one folder, named by a digest of what its vectors depend on: the teacher's identity
(``sentcl.index.identity.model_identity``'s folder path and content fingerprint), its pooler and max length
as the recipe sets them, the normalisation (none: a folder's own Normalize module applies, as in the student)
and the sha256 of the texts. It holds

- ``texts.txt``: the distinct texts the teacher encodes, one a line, in first-occurrence order over the
  corpus' examples (a line break inside a text is written as a space), written atomically;
- ``vectors/``: the sharded encode of ``texts.txt`` (``sentcl.index.shards.encode_shards``): it resumes after
  a kill and re-encodes an edited input; row r is line r + 1 of ``texts.txt``;
- ``teacher.json``: the key's fields, for a person reading the folder.

Every epoch and every run on the same corpus with the same teacher finds the finished entry and reuses it
(the log says ``teacher vectors: reused <dir>``) without opening the teacher; otherwise the log says
``encoding N sentences with teacher ...``. Nothing is encoded per step.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from sentcl import distributed
from sentcl.config.teacher import TeacherConfig
from sentcl.config.typed import ConfigError
from sentcl.defaults import ENCODE_BATCH_SIZE, TEACHER_CACHE_SUBDIR
from sentcl.files.atomic import atomic_write, atomic_write_json
from sentcl.files.fingerprint import json_digest, model_fingerprint
from sentcl.files.output import model_input, prepare_folder
from sentcl.files.paths import cache_root, resolve_model_path
from sentcl.index.shard_resume import shard_stem
from sentcl.index.shards import MANIFEST, ShardSet, encode_shards, read_manifest

logger = logging.getLogger(__name__)
#: the cache entry's layout version (a new layout gets new entries, never misreads old ones); 2: the teacher's
#: fingerprint hashes every byte of its folder (entries of format 1 are not reused: the teacher encodes again)
FORMAT = 2
TEXTS_FILE = "texts.txt"
VECTORS_DIR = "vectors"
#: rows per shard of a teacher encode: the unit that a resumed encode skips
TEACHER_SHARD_SIZE = 10_000


def teacher_cache_dir(configured: str | None) -> Path:
    """``model.teacher_cache``, else ``$SENTCL_CACHE/teachers``, else ``~/.cache/sentcl/teachers``."""
    if configured is not None:
        return Path(configured).expanduser()
    return cache_root(None) / TEACHER_CACHE_SUBDIR


def line_safe(text: str) -> str:
    """A text as one line of ``texts.txt``: line breaks become spaces (whitespace to every tokenizer)."""
    return text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


def distinct_texts(texts: Sequence[str]) -> tuple[list[str], dict[str, int]]:
    """(the distinct texts in first-occurrence order, text -> its row)."""
    rows: dict[str, int] = {}
    for text in texts:
        rows.setdefault(text, len(rows))
    return list(rows), rows


def texts_digest(texts: Sequence[str]) -> str:
    """sha256 of ``texts.txt``'s bytes, computed without writing it."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(line_safe(text).encode("utf-8") + b"\n")
    return digest.hexdigest()


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
        return cls(
            model=teacher.path,
            model_path=str(path.resolve()) if path.exists() else teacher.path,
            model_fingerprint=model_fingerprint(teacher.path),
            pooler=teacher.pooler,
            max_length=teacher.max_length,
            normalize=False,
            texts_sha256=texts_sha256,
        )

    def digest(self) -> str:
        return json_digest(asdict(self))


def _finished(vectors: Path, rows: int) -> bool:
    if not (vectors / MANIFEST).is_file():
        return False
    manifest = read_manifest(vectors)
    return bool(manifest["complete"]) and int(manifest["rows"]) == rows


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
) -> ShardSet:
    """The teacher's vectors of ``texts`` (distinct, in row order): reused from the cache, or encoded into it."""
    key = CacheKey.of(teacher, texts_digest(texts))
    entry = cache_dir / key.digest()
    vectors = entry / VECTORS_DIR
    if _finished(vectors, len(texts)):
        damaged = ShardSet.open(vectors).damaged()
        if not damaged:
            logger.info(
                "teacher vectors: reused %s (%d sentences, teacher %s)", entry, len(texts), teacher.path
            )
            return ShardSet.open(vectors)
        for i, why in damaged.items():  # the entry is sentcl's own: its damaged shards are encoded again
            logger.warning("teacher cache: %s; encoding that shard again", why)
            if distributed.rank() == 0:
                (vectors / f"{shard_stem(i)}.json").unlink(missing_ok=True)
        distributed.barrier()
    if distributed.rank() == 0:
        prepare_folder(
            entry, "teacher-cache", "model.teacher_cache", model_input(teacher.path, "model.teacher")
        )
        atomic_write_json(entry / "teacher.json", asdict(key))
        if not (entry / TEXTS_FILE).is_file():
            atomic_write(entry / TEXTS_FILE, lambda f: _write_lines(f, texts))
    distributed.barrier()  # texts.txt is on disk for every rank
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
