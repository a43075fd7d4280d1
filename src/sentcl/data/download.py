"""``sentcl download``: the papers' data from their public homes, into the data folder's layout.

One table (``SOURCES``) pins each file's URL, its SHA-256 where we know it, and where it goes below the data
folder: ``corpora/wiki1m_for_simcse.txt`` and ``corpora/nli_for_simcse.csv`` (SimCSE's data/download_wiki.sh
and download_nli.sh) and ``senteval/`` (SimCSE's SentEval/data/downstream/download_dataset.sh: SentEval's
evaluation files already tokenised by SentEval's get_transfer_data.bash, the files the paper evaluates on).

- **Checksums.** A source whose ``sha256`` is pinned in the table is checked against it. We could not compute
  the sums of the real files when writing this table (no network), so they are ``None``: the first download
  records the file's SHA-256 in ``<data>/.downloads/SHA256SUMS`` (trust on first use, logged) and every later
  download of that file is checked against the recorded sum. A mismatch removes the bad file and is an error.
- **Resume.** Bytes go to ``<data>/.downloads/<file>.part``; a rerun after a kill asks for the rest with an
  HTTP ``Range`` header and appends only when the server answers ``206`` with a matching ``Content-Range``
  (otherwise it starts again from byte 0).
- **Archives** are checked member by member before anything is written: a member with an absolute path, a
  ``..`` component, a link pointing outside the target folder, or a device file refuses the whole archive.
- **Placement is atomic**: a file is renamed into place after its checksum; an archive is unpacked into a
  temporary folder renamed into place.
- **Mirrors/tests.** ``--mirror URL`` (or ``$SENTCL_DOWNLOAD_MIRROR``) fetches each file from ``URL/<file name>``;
  the Python API takes a whole table (``download(..., sources=...)``).
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from sentcl.data.archives import extract_archive

logger = logging.getLogger(__name__)

MIRROR_ENV = "SENTCL_DOWNLOAD_MIRROR"
DOWNLOADS = ".downloads"  # below the data folder: .part files, fetched archives, SHA256SUMS
PINS_FILE = "SHA256SUMS"  # trust-on-first-use sums, ``<sha256>  <file name>`` a line (sha256sum's format)
CHUNK = 1 << 20
TIMEOUT_S = 60.0
_HF = "https://huggingface.co/datasets/princeton-nlp/datasets-for-simcse/resolve/main"


class DownloadError(OSError):
    """A download failed; the message names the URL and what to do (rerun, or put the file by hand)."""


@dataclass(frozen=True)
class Source:
    name: str  # what ``sentcl download NAME`` calls it
    url: str
    sha256: str | None  # None: not pinned here; recorded on first download (trust on first use)
    target: str  # below the data folder: the file, or the folder an archive becomes
    archive: str | None = None  # None (a plain file) or one of sentcl.data.archives.ARCHIVE_KINDS
    marker: str = ""  # archives: a file below ``target`` that every complete unpack has
    about: str = ""

    @property
    def filename(self) -> str:
        return self.url.rstrip("/").rsplit("/", 1)[-1]


SOURCES: dict[str, Source] = {
    "wiki1m": Source(
        "wiki1m",
        f"{_HF}/wiki1m_for_simcse.txt",
        None,
        "corpora/wiki1m_for_simcse.txt",
        about="1M English Wikipedia sentences (unsupervised SimCSE)",
    ),
    "nli": Source(
        "nli",
        f"{_HF}/nli_for_simcse.csv",
        None,
        "corpora/nli_for_simcse.csv",
        about="SNLI+MNLI triples sent0,sent1,hard_neg (supervised SimCSE)",
    ),
    "senteval": Source(
        "senteval",
        f"{_HF}/senteval.tar",
        None,
        "senteval",
        archive="tar",
        marker="STS/STSBenchmark/sts-dev.csv",
        about="STS12-16, STS-B, SICK, MR, CR, SUBJ, MPQA, SST, TREC, MRPC (SentEval's files)",
    ),
}


def with_mirror(sources: Mapping[str, Source], mirror: str | None) -> dict[str, Source]:
    """The table with each URL replaced by ``<mirror>/<file name>`` (no change when mirror is empty)."""
    if not mirror:
        return dict(sources)
    return {k: replace(s, url=f"{mirror.rstrip('/')}/{s.filename}") for k, s in sources.items()}


def manual_hint(source: Source, data_dir: Path) -> str:
    """What to do by hand: which file to fetch and where to put it."""
    where = data_dir / source.target
    if source.archive:
        return (
            f"fetch {source.url} by hand and unpack it so that {where / source.marker} exists "
            f"(the archive's STS/, SICK/, ... folders go in {where})"
        )
    return f"fetch {source.url} by hand and save it as {where}"


# ---------------------------------------------------------------------- transfer


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


def _content_range_start(header: str | None) -> int | None:
    """``bytes START-END/TOTAL`` -> START; None when absent or malformed."""
    if not header or not header.startswith("bytes "):
        return None
    try:
        return int(header[6:].split("-", 1)[0])
    except ValueError:
        return None


def fetch(url: str, part: Path, name: str) -> None:
    """Download ``url`` into ``part``, resuming from its current size when the server honours Range."""
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "sentcl-download"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = urllib.request.urlopen(request, timeout=TIMEOUT_S)  # noqa: S310 - pinned https URLs
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:  # our .part is as long as (or longer than) the file: start again
            logger.info("%s: server refused the resume range (416); starting again", name)
            part.unlink()
            return fetch(url, part, name)
        raise
    with response:
        status = response.status
        append = (
            bool(have) and status == 206 and _content_range_start(response.headers["Content-Range"]) == have
        )
        if have and not append:
            logger.info("%s: server did not resume at byte %d (HTTP %d); starting again", name, have, status)
            have = 0
        elif have:
            logger.info("%s: resuming at byte %d", name, have)
        length = response.headers["Content-Length"]
        total = have + int(length) if length and length.isdigit() else None
        if total is None:
            logger.warning(
                "%s: the server sends no Content-Length; only the checksum can tell a whole file", name
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


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _read_pins(path: Path) -> dict[str, str]:
    pins = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                digest, _, filename = line.strip().partition("  ")
                pins[filename] = digest
    return pins


def verify(source: Source, file: Path, downloads: Path) -> None:
    """Check ``file`` against the table's sum, else against (or into) the trust-on-first-use pins."""
    actual = sha256_of(file)
    pins_path = downloads / PINS_FILE
    expected, origin = source.sha256, "sentcl's table"
    if expected is None:
        expected, origin = _read_pins(pins_path).get(source.filename), str(pins_path)
    if expected is None:
        with open(pins_path, "a", encoding="utf-8") as handle:
            handle.write(f"{actual}  {source.filename}\n")
        logger.warning(
            "%s: sentcl's table pins no SHA-256 for %s; recorded sha256 %s in %s (trust on first use: later "
            "downloads of this file are checked against it)",
            source.name,
            source.filename,
            actual,
            pins_path,
        )
        return
    if actual != expected:
        file.unlink()
        raise DownloadError(
            f"checksum mismatch for {source.url}: expected sha256 {expected} (from {origin}), got {actual}; "
            "the downloaded file was removed"
        )
    logger.info("%s: sha256 %s matches %s", source.name, actual, origin)


# ---------------------------------------------------------------------- install


def is_installed(source: Source, data_dir: Path) -> bool:
    target = data_dir / source.target
    return (target / source.marker).is_file() if source.archive else target.is_file()


def fetch_verified(source: Source, data_dir: Path) -> Path:
    """The verified downloaded file in ``<data>/.downloads`` (fetched or resumed as needed)."""
    downloads = data_dir / DOWNLOADS
    downloads.mkdir(parents=True, exist_ok=True)
    file = downloads / source.filename
    if not file.is_file():
        part = file.with_name(file.name + ".part")
        try:
            fetch(source.url, part, source.name)
        except urllib.error.HTTPError as err:
            raise DownloadError(
                f"{source.url}: HTTP {err.code} {err.reason}; to install it by hand, {manual_hint(source, data_dir)}"
            ) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as err:
            reason = getattr(err, "reason", err)
            raise DownloadError(
                f"cannot reach {source.url} ({reason}); are you offline? To install it by hand, "
                f"{manual_hint(source, data_dir)}"
            ) from None
        verify(source, part, downloads)
        os.replace(part, file)
    return file


def install(source: Source, data_dir: Path, force: bool = False) -> Path:
    """Download, verify and place one source; returns its path below ``data_dir``."""
    target = data_dir / source.target
    if is_installed(source, data_dir) and not force:
        logger.info("%s: %s is already there", source.name, target)
        return target
    if source.archive and target.exists() and not force:
        raise DownloadError(
            f"{target} exists but is incomplete (no {source.marker}); move it away, or pass --force to replace it"
        )
    file = fetch_verified(source, data_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.archive:
        extract_archive(file, target, source.archive, source.marker)
    else:
        os.replace(file, target)
    if file.exists():
        file.unlink()  # the unpacked archive is not kept; its sum stays in SHA256SUMS
    logger.info("%s: installed %s", source.name, target)
    return target


def download(
    names: Sequence[str], data_dir: Path, sources: Mapping[str, Source] = SOURCES, force: bool = False
) -> list[Path]:
    """Install each named source below ``data_dir``; unknown names are a ValueError listing the valid ones."""
    unknown = [n for n in names if n not in sources]
    if unknown:
        raise ValueError(f"unknown download(s) {', '.join(unknown)}; choose from: {', '.join(sources)}")
    started = time.perf_counter()
    paths = [install(sources[name], Path(data_dir), force=force) for name in dict.fromkeys(names)]
    logger.info("done in %.1f s", time.perf_counter() - started)
    return paths
