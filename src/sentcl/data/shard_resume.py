"""What a resumed sharded encode keeps: the finished shards of the same encode of the same input, no other.

Every shard's sidecar (``shard-<i>.json``) records, beside its line range:

* ``settings_sha256``: the SHA-256 (``sentcl.files.fingerprint.fields_sha256``) of the encode's settings (``SETTINGS_KEYS``: the model, its content
  fingerprint, the pooler, max length, truncation, normalisation, shard size and input path). A resume with
  other settings is refused naming them, whether or not a ``manifest.json`` was written (a killed
  ``torchrun`` encode writes none): shards of two encodes are never mixed.
* ``input_sha256``: the SHA-256 of the input it was encoded from, and ``offsets_sha256``, its line-offset
  table's. An input changed since (even edited in place to the same byte size) makes every finished shard
  be encoded again, with a log line saying what changed.
* ``files``: the SHA-256 of its ``.npy`` and ``.offsets.npy`` (``sentcl.files.fingerprint.file_records``),
  which ``ShardSet`` verifies when it opens a shard.

A sidecar written before these fields existed counts as finished when the manifest's settings match (the
old rule); with no manifest beside it, nothing says what it holds, so its shard is encoded again.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from sentcl.files.fingerprint import fields_sha256, line_offsets_sha256
from sentcl.files.read import read_json

logger = logging.getLogger(__name__)
MANIFEST = "manifest.json"
# the header fields a resumed encode must share with the finished shards (a key an old manifest lacks is skipped)
SETTINGS_KEYS = (
    "model",
    "model_sha256",
    "pooler",
    "max_length",
    "truncate_dim",
    "normalize",
    "shard_size",
    "input",
)


def shard_stem(i: int) -> str:
    return f"shard-{i:05d}"


def finished(out_dir: Path, i: int) -> dict[str, Any] | None:
    """Shard i's sidecar record when the shard is finished (its .npy and sidecar exist), else None."""
    sidecar = out_dir / f"{shard_stem(i)}.json"
    if not sidecar.is_file() or not (out_dir / f"{shard_stem(i)}.npy").is_file():
        return None
    return read_json(sidecar, what="shard record")


def _input_changes(
    saved: dict[str, Any], header: dict[str, Any], done: dict[int, dict[str, Any]]
) -> list[str]:
    """What differs between the input now and the one the finished shards were encoded from."""
    was, now = saved.get("input_fingerprint") or {}, header["input_fingerprint"]
    reasons = [
        f"{name} {str(was.get(key))[:16]} -> {str(now[key])[:16]}"
        for key, name in (("bytes", "size"), ("mtime_ns", "mtime_ns"), ("sha256", "SHA-256"))
        if key in was and was.get(key) != now[key]
    ]
    if saved and not was:
        reasons.append("the manifest records no input fingerprint (written by an older sentcl)")
    stale = [i for i, rec in done.items() if rec.get("input_sha256", now["sha256"]) != now["sha256"]]
    if stale:
        reasons.append(
            f"{len(stale)} finished shard(s) were encoded from other contents (first: shard {stale[0]})"
        )
    if done:
        digests = line_offsets_sha256(Path(header["input"]), header["shard_size"])
        moved = [i for i, rec in done.items() if i >= len(digests) or rec.get("offsets_sha256") != digests[i]]
        if moved:
            reasons.append(f"line offsets of {len(moved)} finished shard(s) differ (first: shard {moved[0]})")
    return reasons


def _refuse(out_dir: Path, detail: str) -> None:
    raise ValueError(
        f"{out_dir} holds shards of another encode ({detail}); use a new --output folder, or run the "
        "first encode's command again to finish it"
    )


def _check_settings(out_dir: Path, saved: dict[str, Any], header: dict[str, Any], done: dict) -> None:
    """Refuse other encoder settings: the manifest's (if any), then every finished shard's own record."""
    changed = [k for k in SETTINGS_KEYS if k in saved and saved.get(k) != header[k]]
    if changed:
        _refuse(out_dir, ", ".join(f"{k}: {saved.get(k)!r} -> {header[k]!r}" for k in changed))
    mine = fields_sha256(header, SETTINGS_KEYS)
    other = [i for i, rec in done.items() if rec.get("settings_sha256") not in (None, mine)]
    if other:
        rec = done[other[0]]
        was = rec.get("settings") if isinstance(rec.get("settings"), dict) else {}
        detail = ", ".join(
            f"{k}: {was.get(k)!r} -> {header[k]!r}" for k in SETTINGS_KEYS if was.get(k) != header[k]
        )
        _refuse(
            out_dir, f"{len(other)} finished shard(s) of other settings, first shard {other[0]}: {detail}"
        )


def check_resume(out_dir: Path, header: dict[str, Any], total: int) -> None:
    """Refuse other encoder settings; encode again (log line) every shard whose input changed (module doc)."""
    path = out_dir / MANIFEST
    saved = read_json(path, what="shard manifest") if path.exists() else {}
    if saved and saved.get("format") != header["format"]:
        raise ValueError(f"{path}: not a sentcl shard manifest (format {saved.get('format')!r})")
    done = {i: rec for i in range(total) if (rec := finished(out_dir, i)) is not None}
    _check_settings(out_dir, saved, header, done)
    if not saved:  # a killed multi-process encode: only the shards' own records say what they hold
        unknown = [i for i, rec in done.items() if "settings_sha256" not in rec]
        for i in unknown:
            (out_dir / f"{shard_stem(i)}.json").unlink()  # a shard counts as finished only with its sidecar
            del done[i]
        if unknown:
            logger.warning(
                "%s: %d shard(s) with no record of their settings are encoded again", out_dir, len(unknown)
            )
    reasons = _input_changes(saved, header, done)
    if reasons and done:
        logger.warning(
            "%s changed since the shards in %s were encoded (%s): re-encoding every shard",
            header["input"],
            out_dir,
            "; ".join(reasons),
        )
        for i in done:
            (out_dir / f"{shard_stem(i)}.json").unlink()  # a shard counts as finished only with its sidecar
