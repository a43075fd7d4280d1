"""What ``sentcl encode`` reads: a text file (one sentence a line), JSON Lines (one object a line, the text in a
field) or Parquet (the text in a column), on local disk or on object storage (``s3://``, ``gs://``, through
pyarrow's file systems; an S3-compatible server is named by ``AWS_ENDPOINT_URL``).

Row i of every output is the i-th text of the source. A local text file is encoded where it lies (its byte
offsets are the shard format's line table). Any other source is staged first: its texts, in order, one a line,
into ``input.txt`` in the shard folder (``stage``), which then plays the local text file's part: the manifest
fingerprints it, ``ShardSet.texts`` reads a hit's text from it, and a resumed encode keeps its shards only when
the staged texts are byte for byte the same. A text holding a line break is staged with spaces in its place
(counted in a log line), so that rows and lines stay one to one.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sentcl.config.names import INPUT_FORMATS
from sentcl.files.atomic import atomic_write, atomic_write_json, fsync_dir
from sentcl.files.budget import LINE_BYTES
from sentcl.files.fingerprint import file_sha256
from sentcl.files.pathcheck import check_input_file
from sentcl.files.read import DataFormatError, decode_line, iter_text_lines

logger = logging.getLogger(__name__)
FORMATS = INPUT_FORMATS  # one home: sentcl.config.names
SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
STAGED = "input.txt"
SOURCE_RECORD = "input.source.json"  # beside the staged texts: where they came from
_READ_BLOCK = 1 << 20


@dataclass(frozen=True)
class Source:
    """Where the texts are (a local path or a URI), how they are stored, and which field holds them."""

    uri: str
    format: str = "text"
    field: str = "text"

    @property
    def remote(self) -> bool:
        return "://" in self.uri

    @property
    def local_text(self) -> bool:
        """A local text file: encoded in place, no staging."""
        return not self.remote and self.format == "text"

    def describe(self) -> dict[str, str]:
        return {"source": self.uri, "source_format": self.format, "text_field": self.field}


def parse_source(uri: str, fmt: str | None = None, field: str = "text") -> Source:
    """The ``--input`` as a Source: the format from ``fmt`` or the name's suffix (text otherwise)."""
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"--input-format {fmt!r}: expected one of {', '.join(FORMATS)}")
    suffix = Path(uri.split("?", 1)[0]).suffix.lower()
    return Source(uri, fmt or SUFFIXES.get(suffix, "text"), field)


def _filesystem(source: Source) -> tuple[Any, str]:
    """(pyarrow file system, path in it); an unreachable server or a missing object is one clear error."""
    from pyarrow import fs

    if not source.remote:
        return fs.LocalFileSystem(), str(Path(source.uri).resolve())
    scheme, _, rest = source.uri.partition("://")
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    try:
        if scheme == "s3" and endpoint:
            region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
            filesystem = fs.S3FileSystem(
                endpoint_override=endpoint,
                region=region,
                connect_timeout=5,
                request_timeout=30,
                retry_strategy=fs.AwsStandardS3RetryStrategy(max_attempts=2),
            )
            return filesystem, rest
        return fs.FileSystem.from_uri(source.uri)
    except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
        raise ValueError(f"--input {source.uri}: cannot open its file system: {err}") from None


def check_source(source: Source) -> None:
    """Raise one clear line unless the source is a readable file (before any model is loaded)."""
    from pyarrow import fs

    if not source.remote:  # sentcl's checks of a local file (a FIFO is named, never opened)
        check_input_file(Path(source.uri), "input", DataFormatError)
        return
    filesystem, path = _filesystem(source)
    try:
        info = filesystem.get_file_info(path)
    except OSError as err:  # an unreachable endpoint, a refused request
        raise ValueError(f"--input {source.uri}: {str(err).splitlines()[0]}") from None
    if info.type == fs.FileType.NotFound:
        raise FileNotFoundError(f"--input {source.uri} does not exist")
    if info.type != fs.FileType.File:
        raise ValueError(f"--input {source.uri} is not a file")


def _budget(raw: bytes) -> bytes:
    """The first ``LINE_BYTES`` bytes of a line, less a UTF-8 character the cut split."""
    if len(raw) <= LINE_BYTES:
        return raw
    part = raw[:LINE_BYTES]
    for back in range(1, 4):  # a lead byte (11xxxxxx) whose character does not fit: drop it and its tail
        byte = part[-back]
        if byte & 0xC0 == 0xC0:
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return part[:-back] if need > back else part
        if byte & 0xC0 != 0x80:
            break
    return part


def _text_lines(stream: Any, where: str) -> Iterator[str]:
    """The lines of a byte stream, decoded as UTF-8 (an error names the line), newline removed; a line over
    ``LINE_BYTES`` is cut there (counted in a warning), so no input grows memory without bound."""
    rest, lineno, cut = b"", 0, 0
    skipping = False  # past a long line's budget: its bytes up to the newline are dropped
    while block := stream.read(_READ_BLOCK):
        lines = (rest + block).split(b"\n")
        rest = lines.pop()
        for raw in lines:
            if skipping:  # the tail of a line already yielded (cut)
                skipping = False
                continue
            lineno += 1
            cut += len(raw) > LINE_BYTES
            yield decode_line(_budget(raw), Path(where), lineno).rstrip("\r")
        if len(rest) > LINE_BYTES:
            if not skipping:
                cut += 1
                lineno += 1
                yield decode_line(_budget(rest), Path(where), lineno).rstrip("\r")
            rest, skipping = b"", True
    if rest and not skipping:
        yield decode_line(rest, Path(where), lineno + 1).rstrip("\r")
    if cut:
        logger.warning("%s: %d line(s) over %d bytes were cut to them", where, cut, LINE_BYTES)


def _jsonl_texts(lines: Iterator[str], source: Source) -> Iterator[str]:
    for lineno, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataFormatError(f"{source.uri}:{lineno}: not a JSON object ({err.msg})") from None
        text = record.get(source.field) if isinstance(record, dict) else None
        if not isinstance(text, str):
            raise DataFormatError(
                f"{source.uri}:{lineno}: field {source.field!r} must be a string, got "
                f"{type(text).__name__ if isinstance(record, dict) and source.field in record else 'none'} "
                "(--text-field names the field)"
            )
        yield text


def _parquet_texts(handle: Any, source: Source) -> Iterator[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(handle)
    except (OSError, pa.ArrowInvalid) as err:
        raise DataFormatError(f"{source.uri}: not a Parquet file ({err})") from None
    names = parquet.schema_arrow.names
    if source.field not in names:
        raise DataFormatError(
            f"{source.uri}: no column {source.field!r} (columns: {', '.join(names)}; --text-field names it)"
        )
    row = 0
    for batch in parquet.iter_batches(columns=[source.field], batch_size=8192):
        for text in batch.column(0).to_pylist():
            if not isinstance(text, str):
                raise DataFormatError(f"{source.uri}: row {row} of column {source.field!r} is {text!r}")
            row += 1
            yield text


def iter_texts(source: Source) -> Iterator[str]:
    """Every text of the source in order, streamed (bounded memory)."""
    if source.local_text:  # sentcl's one reader of a local line file (its line budget)
        yield from (text for _, text in iter_text_lines(Path(source.uri), "input"))
        return
    filesystem, path = _filesystem(source)
    if source.format == "parquet":
        with filesystem.open_input_file(path) as handle:
            yield from _parquet_texts(handle, source)
        return
    with filesystem.open_input_stream(path) as stream:
        lines = _text_lines(stream, source.uri)
        yield from _jsonl_texts(lines, source) if source.format == "jsonl" else lines


def read_texts(source: Source) -> list[str]:
    """Every text of the source, in memory (a plain encode into one .npy holds them all anyway)."""
    return list(iter_texts(source))


def stage(source: Source, folder: Path) -> Path:
    """The source's texts as ``folder/input.txt``, one a line (module doc); an unchanged earlier staging is
    kept as it is (its bytes and mtime), so a resumed encode keeps the finished shards."""
    staged = folder / STAGED
    breaks = 0

    def write(handle: Any) -> None:
        nonlocal breaks
        for text in iter_texts(source):
            if "\n" in text or "\r" in text:
                breaks += 1
                text = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
            handle.write(text.encode("utf-8") + b"\n")

    fresh = atomic_write(folder / f".{STAGED}.new", write)  # whole, fsynced, beside the staged file
    if breaks:
        logger.warning(
            "%s: %d text(s) held line breaks, staged with spaces in their place", source.uri, breaks
        )
    if staged.is_file() and file_sha256(staged, cached=False) == file_sha256(fresh, cached=False):
        fresh.unlink()
        return staged
    os.replace(fresh, staged)
    fsync_dir(folder)
    atomic_write_json(folder / SOURCE_RECORD, source.describe())
    return staged
