"""Sharded embeddings on disk: ``sentcl encode --shard-size N`` for corpora that do not fit in memory.

Row r of the corpus is line r + 1 of the input file (empty lines included, as in a plain encode). Shard i
holds lines i·N + 1 .. (i + 1)·N as ``shard-<i>.npy`` (float32, (rows, D)) with ``shard-<i>.offsets.npy``
(int64 byte offset of each line in the input, to read a hit's text back) and ``shard-<i>.json`` (its line
range), each written atomically (temporary file, fsync, rename); the sidecar JSON is written last, so a
shard counts as finished only when it is complete, and a resumed encode skips finished shards.
``manifest.json`` (the encoder's identity: model, its folder and content fingerprint, pooler, max length,
truncation (``sentcl.data.vector_identity``); dim; the input's fingerprint: size, mtime and SHA-256; the shard
list with line ranges, each shard's SHA-256 and its line-offset table's; sentcl's version; ``complete``) is
rewritten atomically after each shard. ``ShardSet`` verifies a shard's SHA-256 when it first opens it (the
fingerprint cache makes that a stat() for an unchanged file; a shard of an older sentcl has none to check).

On resume the settings must match every finished shard's own record, manifest or not (else an error names
them), and an input changed since is re-encoded from the first shard (``sentcl.data.shard_resume``).

The input is streamed line by line: only one shard's sentences and embeddings are in memory at a time,
and the model sees ``ENCODE_CHUNK`` sentences per call (the tokenizer's output is the large part).
Under ``torchrun`` rank r encodes shards r, r + W, r + 2W, ... (``sentcl.distributed``); rank 0 writes the
manifest once every rank has finished.
"""

from __future__ import annotations

import bisect
import logging
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.data.readers import decode_line
from sentcl.data.shard_input import check_unchanged, stat_key
from sentcl.data.shard_resume import MANIFEST, SETTINGS_KEYS, check_resume, shard_stem
from sentcl.data.shard_resume import finished as _finished
from sentcl.data.vector_identity import model_identity
from sentcl.files.arrays import first_bad_row
from sentcl.files.atomic import atomic_save_npy, atomic_write_json
from sentcl.files.budget import bounded_lines, read_bounded_line
from sentcl.files.fingerprint import (
    IntegrityError,
    array_sha256,
    fields_sha256,
    file_records,
    input_fingerprint,
    verify_records,
)
from sentcl.files.output import Input, model_input, prepare_folder
from sentcl.files.read import load_npy, read_json
from sentcl.version import __version__

logger = logging.getLogger(__name__)
FORMAT = "sentcl-embedding-shards"
# sentences per encode call: the tokenizer's output for a call (with overflow, ~20 KB a long line) stays small
ENCODE_CHUNK = 4096
RESUME_KEYS = SETTINGS_KEYS  # what a resumed encode must share with the finished shards (shard_resume)


def count_lines(path: Path, block: int = 1 << 20) -> int:
    """Number of lines (a last line without newline counts), read in blocks: O(1) memory."""
    count, last = 0, b"\n"
    with open(path, "rb") as handle:
        while chunk := handle.read(block):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")


def iter_line_chunks(
    path: Path, shard_size: int, wanted: set[int] | None = None
) -> Iterator[tuple[int, int, list[str], np.ndarray]]:
    """(shard index, first line number, sentences, byte offsets (rows,)) per wanted shard, streamed."""
    offset, lineno = 0, 0
    texts: list[str] = []
    offsets: list[int] = []
    with open(path, "rb") as handle:
        for _, raw, used in bounded_lines(handle, path):  # a line over the input budget is cut, counted
            shard = lineno // shard_size
            lineno += 1
            if wanted is None or shard in wanted:
                texts.append(decode_line(raw, path, lineno).rstrip("\r\n"))
                offsets.append(offset)
            offset += used
            if lineno % shard_size == 0 and texts:
                yield shard, lineno - len(texts) + 1, texts, np.asarray(offsets, dtype=np.int64)
                texts, offsets = [], []
    if texts:
        yield (lineno - 1) // shard_size, lineno - len(texts) + 1, texts, np.asarray(offsets, dtype=np.int64)


def _progress(message: str) -> None:
    """One line a shard: quiet, log-friendly progress whether or not stderr is a terminal."""
    logger.info(message)


def write_manifest(out_dir: Path, header: dict[str, Any], total_shards: int) -> dict[str, Any]:
    """Rewrite manifest.json from the finished shards' records (atomically)."""
    shards = [rec for i in range(total_shards) if (rec := _finished(out_dir, i)) is not None]
    manifest = {
        **header,
        "rows": sum(s["rows"] for s in shards),
        "shards": shards,
        "complete": len(shards) == total_shards,
    }
    atomic_write_json(out_dir / MANIFEST, manifest)
    return manifest


def _header(
    model: Any,
    input_path: Path,
    out_dir: Path,
    shard_size: int,
    model_name: str,
    max_length: int | None,
    normalize: bool,
) -> dict[str, Any]:
    """The manifest's header: what every shard of this encode holds (after the arguments are checked)."""
    if shard_size < 1:
        raise ValueError(f"--shard-size must be >= 1, got {shard_size}")
    if not input_path.is_file():
        raise FileNotFoundError(f"input file {input_path} does not exist or is not a file")
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"--output {out_dir} is a file; with --shard-size it must be a folder")
    total_lines = count_lines(input_path)
    if total_lines == 0:
        raise ValueError(f"input file {input_path} is empty: nothing to encode")
    return {
        "format": FORMAT,
        "sentcl_version": __version__,
        **model_identity(model_name, model, max_length),
        "normalize": normalize,
        "dim": int(model.embedding_dim),
        "shard_size": shard_size,
        "input": str(input_path.resolve()),
        "input_bytes": input_path.stat().st_size,
        "input_fingerprint": input_fingerprint(input_path),
        "total_lines": total_lines,
    }


def encode_shards(
    model: Any,
    input_path: Path,
    out_dir: Path,
    shard_size: int,
    *,
    model_name: str,
    batch_size: int = 128,
    max_length: int | None = None,
    normalize: bool = False,
) -> dict[str, Any]:
    """Encode ``input_path`` into shards under ``out_dir`` (see the module doc); returns the manifest."""
    from sentcl import distributed

    header = _header(model, input_path, out_dir, shard_size, model_name, max_length, normalize)
    total_shards = -(-header["total_lines"] // shard_size)
    if distributed.rank() == 0:  # a new, empty or earlier shard folder, never onto the input or the model
        prepare_folder(
            out_dir, "shards", "--output", [Input(input_path, "--input"), *model_input(model_name)]
        )
    distributed.barrier()
    check_resume(out_dir, header, total_shards)
    rank, world = distributed.rank(), distributed.world_size()
    mine = {i for i in range(total_shards) if i % world == rank and _finished(out_dir, i) is None}
    skipped = len(range(rank, total_shards, world)) - len(mine)
    if skipped:
        _progress(f"{out_dir}: {skipped} finished shard(s) skipped (resume)")
    if world == 1:
        write_manifest(out_dir, header, total_shards)
    for done, (i, first, texts, offsets) in enumerate(iter_line_chunks(input_path, shard_size, mine), 1):
        start = time.perf_counter()
        emb = np.empty((len(texts), header["dim"]), dtype=np.float32)  # (rows, D)
        for at in range(0, len(texts), ENCODE_CHUNK):  # bounded tokenizer memory whatever the shard size
            part = model.encode(
                texts[at : at + ENCODE_CHUNK],
                batch_size=batch_size,
                normalize=normalize,
                show_progress=sys.stderr.isatty(),
                max_length=max_length,
            )
            emb[at : at + ENCODE_CHUNK] = np.asarray(part, dtype=np.float32).reshape(
                -1, header["dim"]
            )  # (c, D)
        if not np.isfinite(emb).all():
            raise ValueError(
                f"the model produced non-finite embeddings for lines {first}..{first + len(texts) - 1}"
            )
        stem = shard_stem(i)
        atomic_save_npy(out_dir / f"{stem}.npy", emb)
        atomic_save_npy(out_dir / f"{stem}.offsets.npy", offsets)
        record = {
            "index": i,
            "file": f"{stem}.npy",
            "offsets": f"{stem}.offsets.npy",
            "start_line": first,
            "end_line": first + len(texts) - 1,
            "rows": len(texts),
            "offsets_sha256": array_sha256(offsets),
            "input_sha256": header["input_fingerprint"]["sha256"],
            "settings_sha256": fields_sha256(header, SETTINGS_KEYS),
            "settings": {k: header[k] for k in SETTINGS_KEYS},
            "files": file_records(out_dir, (f"{stem}.npy", f"{stem}.offsets.npy")),
            "rank": rank,
        }
        atomic_write_json(out_dir / f"{stem}.json", record)
        if world == 1:
            write_manifest(out_dir, header, total_shards)
        _progress(
            f"shard {i + 1}/{total_shards}: lines {first}-{record['end_line']} encoded "
            f"in {time.perf_counter() - start:.1f}s ({done}/{len(mine)} of this process)"
        )
    distributed.barrier()  # every rank's shards are on disk
    if rank == 0:
        write_manifest(out_dir, header, total_shards)
    distributed.barrier()  # the manifest is on disk
    return read_manifest(out_dir)


def read_manifest(folder: Path) -> dict[str, Any]:
    path = Path(folder) / MANIFEST
    if Path(folder).exists() and not Path(folder).is_dir():
        raise ValueError(f"{folder} is a file, not a folder of embedding shards")
    manifest = read_json(path, what="shard manifest")
    missing = [k for k in ("format", "dim", "shards", "rows", "complete") if k not in manifest]
    if missing or manifest.get("format") != FORMAT:
        raise ValueError(
            f"{path}: not a sentcl shard manifest (missing {', '.join(missing) or 'the right format tag'})"
        )
    if not isinstance(manifest["shards"], list) or not isinstance(manifest["dim"], int):
        raise ValueError(f"{path}: 'shards' must be a list and 'dim' an integer")
    return manifest


def _record_sound(rec: dict[str, Any]) -> bool:
    """A shard record's own fields: a file name in the folder (no path), a whole number of rows >= 0, and an
    offsets file name if any (a damaged manifest is named, never a TypeError)."""
    file, rows, offsets = rec.get("file"), rec.get("rows"), rec.get("offsets", "")
    names = isinstance(file, str) and isinstance(offsets, str) and file == Path(file).name != ""
    return names and isinstance(rows, int) and not isinstance(rows, bool) and rows >= 0


@dataclass
class ShardSet:
    """The shards of a finished encode, memory-mapped one at a time; row r is line r + 1 of the input."""

    folder: Path
    manifest: dict[str, Any]
    # the shards ``gather`` has mapped, kept open for the next call: a fresh mapping page-faults on every row it
    # reads, and a re-scoring search gathers k·r rows for every query
    _gathered: dict[int, np.ndarray] = field(default_factory=dict, init=False, repr=False, compare=False)
    _verified: set[int] = field(default_factory=set, init=False, repr=False, compare=False)
    # manifest.json as it was when opened: an encode run again into the folder since is seen by ``check_input``
    _opened: tuple[int, int, int] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def open(cls, folder: str | Path) -> ShardSet:
        folder = Path(folder)
        manifest = read_manifest(folder)
        if not manifest["complete"]:
            raise ValueError(
                f"{folder / MANIFEST}: the encode is not finished ({len(manifest['shards'])} shard(s) done); "
                "run the same sentcl encode command again to resume it"
            )
        expected = 1
        for i, rec in enumerate(manifest["shards"]):
            if not isinstance(rec, dict) or rec.get("start_line") != expected or "rows" not in rec:
                raise ValueError(f"{folder / MANIFEST}: shard records are not contiguous from line 1")
            if not _record_sound(rec):
                raise ValueError(
                    f"{folder / MANIFEST}: shard record {i} is damaged (file {rec.get('file')!r}, rows "
                    f"{rec.get('rows')!r}); run the encode again into a new folder"
                )
            expected += rec["rows"]
        shards = cls(folder, manifest)
        shards._opened = stat_key(folder / MANIFEST)
        return shards

    @property
    def dim(self) -> int:
        return int(self.manifest["dim"])

    @property
    def rows(self) -> int:
        return int(self.manifest["rows"])

    def starts(self) -> list[int]:
        return [rec["start_line"] - 1 for rec in self.manifest["shards"]]

    def array(self, i: int) -> np.ndarray:
        """Shard i memory-mapped, checked against its record: (rows, dim) float32."""
        rec = self.manifest["shards"][i]
        path = self.folder / rec["file"]
        arr = load_npy(path)
        if arr.shape != (rec["rows"], self.dim) or arr.dtype != np.float32:
            raise ValueError(
                f"{path}: holds a {arr.dtype} array of shape {arr.shape}, the manifest says "
                f"({rec['rows']}, {self.dim}) float32; re-run the encode into a new folder"
            )
        if i not in self._verified and "files" in rec:  # a shard of an older sentcl records no digests
            verify_records(
                self.folder,
                rec["files"],
                f"{self.folder / MANIFEST} (shard {i})",
                "the shard was damaged or replaced: run the encode again into a new folder",
            )
            self._verified.add(i)
        if i not in self._verified:  # no digests to trust: its values are checked instead, once
            bad = first_bad_row(arr)
            if bad is not None:
                raise ValueError(
                    f"{path}: row {bad[0]} (line {rec['start_line'] + bad[0]}) holds {bad[1]}: such a vector can "
                    "never be found; re-run the encode into a new folder"
                )
            self._verified.add(i)
        return arr

    def damaged(self) -> dict[int, str]:
        """Shard -> why, for every shard whose files no longer hold what its record says: another SHA-256, a
        cut or unreadable .npy, another shape (every shard is checked)."""
        found = {}
        for i in range(len(self.manifest["shards"])):
            try:
                self.array(i)
            except (IntegrityError, ValueError) as err:
                found[i] = str(err)
        return found

    def iter_arrays(self) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, shard array) in order."""
        for i, start in enumerate(self.starts()):
            yield start, self.array(i)

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        """n rows drawn uniformly without replacement (all rows if n >= rows): (n, dim) float32."""
        if n >= self.rows:
            return np.concatenate([np.asarray(a) for _, a in self.iter_arrays()])  # (rows, D)
        picks = np.sort(np.random.default_rng(seed).choice(self.rows, size=n, replace=False))
        starts = self.starts() + [self.rows]
        parts = []
        for i in range(len(starts) - 1):
            sel = picks[(picks >= starts[i]) & (picks < starts[i + 1])] - starts[i]
            if len(sel):
                parts.append(np.asarray(self.array(i)[sel]))
        return np.concatenate(parts)  # (n, D)

    def check_input(self) -> None:
        """Raise ``InputChangedError`` when the shards were encoded again since they were opened, or their
        input is missing or changed since it was encoded (``sentcl.data.shard_input``)."""
        check_unchanged(self.folder, self.folder / MANIFEST, self.manifest, self._opened)

    def gather(self, rows: np.ndarray | list[int]) -> np.ndarray:
        """The stored vectors of the given row ids, in the given order: (len(rows), dim) float32 (the shards
        read stay mapped; ``array`` and ``iter_arrays`` map a shard afresh on each call)."""
        ids = np.asarray(rows, dtype=np.int64).reshape(-1)  # (n,)
        if len(ids) and (ids.min() < 0 or ids.max() >= self.rows):
            raise IndexError(f"row ids must lie in 0..{self.rows - 1}")
        out = np.empty((len(ids), self.dim), dtype=np.float32)  # (n, D)
        starts = np.asarray(self.starts())
        which = np.searchsorted(starts, ids, side="right") - 1  # (n,) shard of each id
        for i in np.unique(which):
            sel = np.nonzero(which == i)[0]
            if int(i) not in self._gathered:
                self._gathered[int(i)] = self.array(int(i))
            out[sel] = self._gathered[int(i)][ids[sel] - starts[i]]
        return out

    def texts(self, rows: np.ndarray | list[int]) -> list[str]:
        """The input lines of the given rows (read by byte offset; the input must be unchanged)."""
        src = Path(self.manifest["input"])
        self.check_input()
        starts = self.starts()
        out = []
        with open(src, "rb") as handle:
            for row in (int(r) for r in rows):
                if not 0 <= row < self.rows:
                    raise IndexError(f"row {row} out of range for {self.rows} rows")
                i = bisect.bisect_right(starts, row) - 1
                rec = self.manifest["shards"][i]
                offsets = load_npy(self.folder / rec["offsets"])
                handle.seek(int(offsets[row - starts[i]]))
                out.append(decode_line(read_bounded_line(handle)[0], src, row + 1).rstrip("\r\n"))
        return out
