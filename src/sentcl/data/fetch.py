"""One file's transfer over HTTP(S) for ``sentcl download``, resumable: bytes go to a ``.part`` file, a rerun asks
for the rest with a ``Range`` header and appends only when the server answers ``206`` at the ``.part``'s size
with a larger total (otherwise the ``.part`` is discarded and the file fetched from byte 0); the length the
server states decides whether the transfer is known whole. ``data/download.py`` holds the table, the checksums
and the placement."""

from __future__ import annotations

import errno
import http.client
import logging
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

logger = logging.getLogger(__name__)

CHUNK = 1 << 20
_DISK_ERRORS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO}
TIMEOUT_S = 60.0


class DownloadError(OSError):
    """A download failed; the message names the URL and what to do (rerun, or put the file by hand)."""


class _Progress:
    """tqdm on a terminal; otherwise a log line every 10% (quiet, line-based)."""

    def __init__(self, name: str, done: int, total: int | None) -> None:
        self.name, self.done, self.total, self.next_report = name, done, total, 0.1
        self.bar = None
        if sys.stderr.isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, initial=done, unit="B", unit_scale=True, desc=name)

    def update(self, n: int) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
        elif self.total and self.done / self.total >= self.next_report:
            logger.info(
                "%s: %d%% (%d of %d bytes)", self.name, 100 * self.done // self.total, self.done, self.total
            )
            self.next_report = (self.done / self.total // 0.1 + 1) * 0.1

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _content_range(header: str | None) -> tuple[int, int | None] | None:
    """``bytes START-END/TOTAL`` -> (START, TOTAL or None for ``*``); None when absent or malformed."""
    if not header or not header.startswith("bytes "):
        return None
    span, _, total = header[6:].partition("/")
    try:
        return int(span.split("-", 1)[0]), None if total.strip() in ("", "*") else int(total)
    except ValueError:
        return None


def _restart(url: str, part: Path, name: str, why: str) -> bool:
    logger.info("%s: %s; discarding %s and starting again from byte 0", name, why, part)
    part.unlink(missing_ok=True)
    return fetch(url, part, name)


def fetch(url: str, part: Path, name: str) -> bool:
    """Download ``url`` into ``part``, resuming from its current size when the server honours Range (see the
    module doc). Returns whether the transfer is known whole (its length matched the server's)."""
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "sentcl-download"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = urllib.request.urlopen(request, timeout=TIMEOUT_S)  # noqa: S310 - pinned https URLs
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:  # our .part is as long as (or longer than) the file
            return _restart(url, part, name, "the server refused the resume range (HTTP 416)")
        raise
    with response:
        status, span = response.status, _content_range(response.headers["Content-Range"])
        if status == 206 and not have:
            raise DownloadError(
                f"{url}: HTTP 206 (a part) to a request for the whole file; try another mirror"
            )
        if status == 206 and (span is None or span[0] != have):
            response.close()
            return _restart(url, part, name, f"the server answered the resume at byte {have} elsewhere")
        if status == 206 and (
            (span[1] is not None and span[1] <= have) or response.headers["Content-Length"] == "0"
        ):
            response.close()
            why = (
                f"the remote file has {span[1]} bytes, the .part already {have}"
                if span[1] is not None and span[1] <= have
                else f"the server sent an empty part at byte {have}"
            )
            return _restart(url, part, name, why)
        append = bool(have) and status == 206
        if have and not append:
            logger.info("%s: server did not resume at byte %d (HTTP %d); starting again", name, have, status)
            have = 0
        elif have:
            logger.info("%s: resuming at byte %d", name, have)
        length = response.headers["Content-Length"]
        total = have + int(length) if length and length.isdigit() else None
        if append and span is not None and span[1] is not None:
            total = span[1]  # the whole file's length, which Content-Range states
        if total is None:
            logger.warning(
                "%s: the server sends no Content-Length; whether the file is whole is judged from what "
                "sentcl's table knows of it",
                name,
            )
        progress = _Progress(name, have, total)
        try:
            with open(part, "ab" if append else "wb") as out:
                while chunk := response.read(CHUNK):
                    out.write(chunk)
                    progress.update(len(chunk))
                out.flush()
                os.fsync(out.fileno())
        except (OSError, http.client.HTTPException) as err:
            if (
                isinstance(err, OSError) and err.errno in _DISK_ERRORS
            ):  # writing here failed, not the transfer
                err.filename = err.filename or str(part)
                raise
            raise DownloadError(
                f"transfer of {url} broke off after {part.stat().st_size} bytes ({type(err).__name__}: {err}); "
                f"run the command again to resume from {part}"
            ) from None
        finally:
            progress.close()
    size = part.stat().st_size
    if total is not None and size != total:
        raise DownloadError(
            f"transfer of {url} ended at {size} of {total} bytes; run the command again to resume from {part}"
        )
    return total is not None


def fetch_prefix(url: str, part: Path, name: str, size: int) -> bool:
    """Download the first ``size`` bytes of ``url`` into ``part`` (asked with ``Range: bytes=0-(size-1)``; a
    server that ignores it answers 200 and only ``size`` bytes are read). Returns True (the length is known);
    fewer bytes than ``size`` is a DownloadError."""
    request = urllib.request.Request(
        url, headers={"User-Agent": "sentcl-download", "Range": f"bytes=0-{size - 1}"}
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:  # noqa: S310 - pinned https URLs
        span = _content_range(response.headers["Content-Range"])
        if response.status == 206 and (span is None or span[0] != 0):
            raise DownloadError(f"{url}: HTTP 206 from another byte than the first; try another mirror")
        progress, got = _Progress(name, 0, size), 0
        try:
            with open(part, "wb") as out:
                while got < size and (chunk := response.read(min(CHUNK, size - got))):
                    out.write(chunk)
                    got += len(chunk)
                    progress.update(len(chunk))
        finally:
            progress.close()
    if got < size:
        raise DownloadError(f"{url} ended after {got} of the {size} bytes of {name}; run the command again")
    return True
