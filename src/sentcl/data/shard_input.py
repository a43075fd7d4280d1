"""Whether a shard folder's hits can still be read as they were encoded: its input unchanged since the encode,
and its shards not encoded again since a reader opened them.

A hit's text is read back from the encoded input through the shard's line offsets, so an input edited since
the encode would give another sentence's text; a long-lived reader (the service) that opened the shards
holds rows that name other sentences once the same encode is run again into the folder. Both are an
``InputChangedError`` naming what changed (``fact``) and what to do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sentcl.files.fingerprint import input_fingerprint


class InputChangedError(ValueError):
    """The hits' texts can no longer be read as they were encoded (module doc). ``fact`` says what changed;
    ``str()`` adds what to do."""

    def __init__(self, fact: str, advice: str) -> None:
        super().__init__(f"{fact}; {advice}")
        self.fact = fact


def stat_key(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime) of ``path``, or None where it is gone: an atomic rewrite is another inode."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def check_unchanged(
    folder: Path, manifest_file: Path, manifest: dict[str, Any], opened: tuple[int, int, int] | None
) -> None:
    """Raise ``InputChangedError`` when ``manifest_file`` is not what it was when opened (``opened``: its
    ``stat_key`` then; None: not checked), or when the encoded input is missing or changed: another size, or
    another mtime whose SHA-256 differs too (a manifest of an older sentcl, with a sampled hash only: another
    mtime). Two stat() calls when unchanged."""
    if opened is not None and stat_key(manifest_file) != opened:
        raise InputChangedError(
            f"the shards in {folder} were encoded again since they were opened",
            "open the index again (rebuilt from them) to read hits' texts",
        )
    src = Path(manifest["input"])
    saved = manifest.get("input_fingerprint")
    stat = src.stat() if src.is_file() else None
    changed = stat is None or stat.st_size != manifest.get("input_bytes")
    if (
        not changed
        and isinstance(saved, dict)
        and stat is not None
        and stat.st_mtime_ns != saved.get("mtime_ns")
    ):
        changed = input_fingerprint(src)["sha256"] != saved.get("sha256")
    if changed:
        raise InputChangedError(
            f"the input {src} of {folder} is missing or changed since it was encoded",
            "re-encode it (run the same sentcl encode command again) to read hits' texts",
        )
