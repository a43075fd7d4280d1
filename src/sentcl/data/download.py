"""``sentcl download``: the papers' data from their public homes, into the data folder's layout.

One table (``SOURCES``) pins each file's URL, its SHA-256 where we know it, and where it goes below the data
folder (``sentcl.files.paths.DOWNLOAD_TARGETS``): ``corpora/wiki1m_for_simcse.txt`` and
``corpora/nli_for_simcse.csv`` (SimCSE's data/download_wiki.sh and download_nli.sh), ``corpora/wiki1m_prefix.txt``
(the demo's corpus: the first 11,913 lines of the wiki1m file, fetched with an HTTP ``Range`` of its pinned
length, so the demo needs 1.3 MB instead of 120 MB) and ``senteval/`` (SimCSE's SentEval/data/downstream/download_dataset.sh: SentEval's
evaluation files already tokenised by SentEval's get_transfer_data.bash, the files the paper evaluates on).

- **Checksums.** A source whose ``sha256`` is pinned in the table is checked against it. We could not compute
  the sums of the real files when writing this table (no network), so they are ``None``: the first download
  records the file's SHA-256 in ``<data>/.downloads/SHA256SUMS`` (trust on first use, logged) and every later
  download of that file is checked against the recorded sum. A mismatch removes the bad file and is an error
  that says how to recover: ``--forget-sum`` discards the recorded sum and the cached files (``--force``
  alone downloads again but still checks the recorded sum, so a file changed upstream is caught).
- **Only a whole, valid file is pinned.** A sum is recorded only after the file validates: the transfer is
  known complete (its length matched ``Content-Length`` or ``Content-Range``'s total), and an archive was
  readable to its end (a plain tar needs its end-of-archive blocks; gzip and zip carry their own ends), held
  its marker file and was unpacked. A transfer without a length cannot show that it is whole, so the table's
  knowledge decides: an expected ``size``, else for a text file a final newline and the expected ``lines``
  (wiki1m: 1,000,000); a file that fails is cut short, an error (the ``.part`` is kept to resume). A text
  file with neither known (nli) is installed with a warning that its completeness cannot be verified, and
  its sum is NOT pinned. A refused or cut archive is deleted, never pinned and never reused.
- **Resume** (``data/fetch.py``). Bytes go to ``<data>/.downloads/<file>.part``; a rerun after a kill asks for the rest with an
  HTTP ``Range`` header and appends only when the server answers ``206`` with a ``Content-Range`` starting
  at the ``.part``'s size and a total larger than it. Otherwise (a ``200``, a ``416``, a ``206`` starting
  elsewhere, a total no larger than the ``.part``: the ``.part`` is as long as or longer than the remote
  file) the ``.part`` is discarded and the file fetched again from byte 0; a ``206`` body is never written
  as the start of a file.
- ``--force`` discards the cached archive and the ``.part`` and installs again.
- **Archives** are checked member by member before anything is written: a member with an absolute path, a
  ``..`` component, a link pointing outside the target folder, or a device file refuses the whole archive.
- **Placement is atomic**: a file is renamed into place after its checksum; an archive is unpacked into a
  temporary folder renamed into place.
- **Mirrors/tests.** ``--mirror URL`` (or ``$SENTCL_DOWNLOAD_MIRROR``) fetches each file from ``URL/<file name>``;
  the Python API takes a whole table (``download(..., sources=...)``).
"""

from __future__ import annotations

import http.client
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from sentcl.data.archives import extract_archive
from sentcl.data.fetch import CHUNK, DownloadError, fetch, fetch_prefix
from sentcl.files.fingerprint import file_sha256
from sentcl.files.output import claim_file, claim_folder, write_marker
from sentcl.files.paths import DOWNLOAD_TARGETS

logger = logging.getLogger(__name__)

MIRROR_ENV = "SENTCL_DOWNLOAD_MIRROR"
DOWNLOADS = ".downloads"  # below the data folder: .part files, fetched archives, SHA256SUMS
PINS_FILE = "SHA256SUMS"  # trust-on-first-use sums, ``<sha256>  <file name>`` a line (sha256sum's format)
_HF = "https://huggingface.co/datasets/princeton-nlp/datasets-for-simcse/resolve/main"


@dataclass(frozen=True)
class Source:
    name: str  # what ``sentcl download NAME`` calls it
    url: str
    sha256: str | None  # None: not pinned here; recorded on first download (trust on first use)
    target: str  # below the data folder: the file, or the folder an archive becomes
    archive: str | None = None  # None (a plain file) or one of sentcl.data.archives.ARCHIVE_KINDS
    marker: str = ""  # archives: a file below ``target`` that every complete unpack has
    about: str = ""
    size: int | None = None  # bytes of the whole file, where known: tells a cut transfer without a length
    lines: int | None = None  # text files: lines of the whole file, where known (same use)
    prefix: bool = (
        False  # the first ``size`` bytes of the file at ``url`` (asked with a Range), not all of it
    )

    @property
    def filename(self) -> str:
        return self.url.rstrip("/").rsplit("/", 1)[-1]

    @property
    def cache_name(self) -> str:
        """The file's name in ``<data>/.downloads``: a prefix never shares the whole file's ``.part``."""
        return f"{self.name}.{self.filename}" if self.prefix else self.filename


SOURCES: dict[str, Source] = {
    "wiki1m_prefix": Source(
        "wiki1m_prefix",
        f"{_HF}/wiki1m_for_simcse.txt",
        "626175d8bf7d77e323f6d74bed023563abe2123b1b7990ccfcd958880ea71f5b",  # the data folder's README's file
        DOWNLOAD_TARGETS["wiki1m_prefix"],
        about="the first 11,913 lines of wiki1m (the demo's corpus, 1.3 MB)",
        size=1_279_689,
        lines=11_913,
        prefix=True,
    ),
    "wiki1m": Source(
        "wiki1m",
        f"{_HF}/wiki1m_for_simcse.txt",
        None,
        DOWNLOAD_TARGETS["wiki1m"],
        about="1M English Wikipedia sentences (unsupervised SimCSE)",
        lines=1_000_000,  # SimCSE's file: one sentence a line (the data folder's README)
    ),
    "nli": Source(
        "nli",
        f"{_HF}/nli_for_simcse.csv",
        None,
        DOWNLOAD_TARGETS["nli"],
        about="SNLI+MNLI triples sent0,sent1,hard_neg (supervised SimCSE)",
    ),
    "senteval": Source(
        "senteval",
        f"{_HF}/senteval.tar",
        None,
        DOWNLOAD_TARGETS["senteval"],
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
    if source.prefix:
        return f"fetch {source.url} by hand and save its first {source.lines} lines as {where}"
    if source.archive:
        return (
            f"fetch {source.url} by hand and unpack it so that {where / source.marker} exists "
            f"(the archive's STS/, SICK/, ... folders go in {where})"
        )
    return f"fetch {source.url} by hand and save it as {where}"


def _read_pins(path: Path) -> dict[str, str]:
    pins = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                digest, _, filename = line.strip().partition("  ")
                pins[filename] = digest
    return pins


def _write_pins(path: Path, pins: dict[str, str]) -> None:
    from sentcl.files.atomic import atomic_write_text

    atomic_write_text(path, "".join(f"{digest}  {name}\n" for name, digest in pins.items()))


def pin(source: Source, digest: str, downloads: Path) -> None:
    """Record ``digest`` as the trusted sum of ``source``'s file: call only once the file has validated."""
    pins_path = downloads / PINS_FILE
    _write_pins(pins_path, _read_pins(pins_path) | {source.cache_name: digest})
    logger.warning(
        "%s: sentcl's table pins no SHA-256 for %s; recorded sha256 %s in %s (trust on first use: later "
        "downloads of this file are checked against it)",
        source.name,
        source.cache_name,
        digest,
        pins_path,
    )


def forget(source: Source, data_dir: Path, forget_sum: bool) -> None:
    """Discard the cached download and the ``.part`` of ``source`` (and its recorded sum if ``forget_sum``)."""
    downloads = data_dir / DOWNLOADS
    for stale in (downloads / source.cache_name, downloads / f"{source.cache_name}.part"):
        if stale.is_file():
            logger.info("%s: discarding the cached %s", source.name, stale)
            stale.unlink()
    pins = _read_pins(downloads / PINS_FILE)
    if forget_sum and source.cache_name in pins:
        logger.warning("%s: discarding the recorded sha256 %s", source.name, pins.pop(source.cache_name))
        _write_pins(downloads / PINS_FILE, pins)


def verify(source: Source, file: Path, downloads: Path) -> str | None:
    """Check ``file`` against the table's sum, else against the trust-on-first-use pins. Returns the file's
    sum when nothing vouches for it yet (the caller pins it once the file has validated), else None."""
    actual = file_sha256(file, cached=False)  # every byte, streamed
    pins_path = downloads / PINS_FILE
    expected, origin = source.sha256, "sentcl's table"
    if expected is None:
        expected, origin = _read_pins(pins_path).get(source.cache_name), str(pins_path)
    if expected is None:
        return actual
    if actual != expected:
        file.unlink()
        recover = (
            "this is not the file sentcl's table names: try another --mirror"
            if source.sha256
            else "the sum was recorded by the first download of this file (trust on first use); if the file "
            "has legitimately changed, or that first download was bad, run again with --forget-sum to "
            "discard the recorded sum and the cached files"
        )
        raise DownloadError(
            f"checksum mismatch for {source.url}: expected sha256 {expected} (from {origin}), got {actual}; "
            f"the downloaded file was removed; {recover}"
        )
    logger.info("%s: sha256 %s matches %s", source.name, actual, origin)
    return None


def check_whole(source: Source, file: Path, known_whole: bool) -> bool:
    """Whether ``file`` is known whole: its transfer's length matched, or it has the table's ``size`` /
    ``lines`` (a text file must end with a newline). A file known cut is a DownloadError (the ``.part`` is
    kept to resume); False: nothing can tell (archives are judged when unpacked)."""
    if known_whole:
        return True
    size = file.stat().st_size
    cut = source.size is not None and size != source.size
    if not source.archive and not cut:
        with open(file, "rb") as handle:
            handle.seek(max(size - 1, 0))
            cut = handle.read(1) != b"\n"  # an empty file, or a last line without its newline
        if not cut and source.lines is not None:
            with open(file, "rb") as handle:
                cut = (
                    sum(block.count(b"\n") for block in iter(lambda: handle.read(CHUNK), b"")) != source.lines
                )
    if cut:
        raise DownloadError(
            f"transfer of {source.url} is cut short: the server sent no length, and the {size} bytes are not "
            f"the whole file ({_expected(source)}); run the command again to resume from {file}"
        )
    return source.size is not None or source.lines is not None


def _expected(source: Source) -> str:
    if source.size is not None:
        return f"sentcl's table gives {source.size} bytes"
    if source.lines is not None:
        return f"a text file of {source.lines} lines, each ending with a newline"
    return "a text file ends with a newline"


# ---------------------------------------------------------------------- install


def is_installed(source: Source, data_dir: Path) -> bool:
    target = data_dir / source.target
    return (target / source.marker).is_file() if source.archive else target.is_file()


def fetch_verified(source: Source, data_dir: Path) -> tuple[Path, str | None, bool]:
    """The downloaded file in ``<data>/.downloads`` (fetched or resumed as needed), checked against a known
    sum; with the sum to pin once it validates (None: already vouched for) and whether it is known whole."""
    downloads = data_dir / DOWNLOADS
    downloads.mkdir(parents=True, exist_ok=True)
    file = downloads / source.cache_name
    if file.is_file():  # left by a run killed before placing it: judged again
        try:
            return file, verify(source, file, downloads), check_whole(source, file, False)
        except DownloadError:
            file.unlink(missing_ok=True)
            raise
    part = file.with_name(file.name + ".part")
    try:
        if source.prefix and source.size is not None:
            whole = fetch_prefix(source.url, part, source.name, source.size)
        else:
            whole = fetch(source.url, part, source.name)
    except urllib.error.HTTPError as err:
        raise DownloadError(
            f"{source.url}: HTTP {err.code} {err.reason}; to install it by hand, {manual_hint(source, data_dir)}"
        ) from None
    except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as err:
        reason = getattr(err, "reason", err)
        raise DownloadError(
            f"cannot reach {source.url} ({reason}); are you offline? {data_dir / source.target} is missing: run "
            f"sentcl download {source.name} again online, or give --mirror URL (or ${MIRROR_ENV}) naming a "
            f"server with the same file names, or {manual_hint(source, data_dir)}"
        ) from None
    digest = verify(source, part, downloads)
    whole = check_whole(source, part, whole)
    os.replace(part, file)
    return file, digest, whole


def claim_target(source: Source, target: Path, force: bool) -> None:
    """The output policy (``sentcl.files.output``) for a download's place, before anything is fetched: a
    file only with ``--force``; a folder only when sentcl downloaded it (its marker, or the source's own
    marker file) and ``--force`` is given: never a folder of the user's files."""
    flag = f"sentcl download {source.name}:"
    if source.archive:
        claim_folder(target, "download", flag, replace=True, overwrite=force, known=(source.marker,))
    else:
        claim_file(target, flag, overwrite=force)


def install(source: Source, data_dir: Path, force: bool = False, forget_sum: bool = False) -> Path:
    """Download, verify and place one source; returns its path below ``data_dir``. ``force``: download again
    (the cached archive and ``.part`` are discarded first); ``forget_sum``: also discard the recorded sum."""
    target = data_dir / source.target
    if force or forget_sum:
        forget(source, data_dir, forget_sum)
    elif is_installed(source, data_dir):
        logger.info("%s: %s is already there", source.name, target)
        return target
    claim_target(source, target, force or forget_sum)  # both download again
    file, digest, whole = fetch_verified(source, data_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.archive:
        try:
            extract_archive(file, target, source.archive, source.marker)
        except BaseException:
            file.unlink(missing_ok=True)  # a refused or cut archive is never reused, and never pinned
            raise
        write_marker(target, "download")
        whole = True  # read to its end, its marker found, unpacked
    else:
        os.replace(file, target)
    if file.exists():
        file.unlink()  # the unpacked archive is not kept; its sum stays in SHA256SUMS
    if digest is not None and whole:
        pin(source, digest, data_dir / DOWNLOADS)
    elif digest is not None:
        logger.warning(
            "%s: the server sent no length and sentcl's table knows neither the size nor the line count of "
            "%s, so whether it is whole cannot be verified: installed, but its sha256 %s is NOT recorded; "
            "check the file (or download it again from a server that sends Content-Length)",
            source.name,
            target,
            digest,
        )
    logger.info("%s: installed %s", source.name, target)
    return target


def download(
    names: Sequence[str],
    data_dir: Path,
    sources: Mapping[str, Source] = SOURCES,
    force: bool = False,
    forget_sum: bool = False,
) -> list[Path]:
    """Install each named source below ``data_dir``; unknown names are a ValueError listing the valid ones.

    A source that fails (offline, a bad mirror, a wrong sum) does not stop the others: each is tried, and one
    DownloadError then names every source that failed with its reason, and those that were installed."""
    unknown = [n for n in names if n not in sources]
    if unknown:
        raise ValueError(f"unknown download(s) {', '.join(unknown)}; choose from: {', '.join(sources)}")
    started = time.perf_counter()
    paths: list[Path] = []
    failed: dict[str, DownloadError] = {}
    for name in dict.fromkeys(names):
        try:
            paths.append(install(sources[name], Path(data_dir), force, forget_sum))
        except DownloadError as err:
            failed[name] = err
    if failed:
        raise _failures(failed, [name for name in dict.fromkeys(names) if name not in failed])
    logger.info("done in %.1f s", time.perf_counter() - started)
    return paths


def _failures(failed: Mapping[str, DownloadError], installed: Sequence[str]) -> DownloadError:
    """One error naming every source that failed (each with its own reason) and those that were installed."""
    if len(failed) == 1 and not installed:
        return next(iter(failed.values()))
    done = f" ({', '.join(installed)} installed)" if installed else ""
    reasons = " | ".join(f"{name}: {err}" for name, err in failed.items())
    return DownloadError(f"{len(failed)} of {len(failed) + len(installed)} downloads failed{done}: {reasons}")
