"""Safe unpacking of downloaded archives (tar, tar.gz, zip).

Every member is checked before anything is written; one bad member refuses the whole archive:
an absolute path or drive, a ``..`` component, a symlink or hardlink whose target resolves outside the
folder, a device or fifo. The archive is unpacked into a temporary folder beside the target, its root found
by a marker file (archives wrap their files in zero, one or two folders), and renamed into place.

A cut archive is refused too: gzip and zip carry their own ends (a trailer, a central directory), and a plain
tar must end with its two zero blocks after the last member (a tar cut at a member boundary otherwise reads
as a smaller, valid archive).
"""

from __future__ import annotations

import shutil
import stat
import tarfile
import uuid
import zipfile
from pathlib import Path, PurePosixPath

ARCHIVE_KINDS = ("tar", "tar.gz", "zip")


class UnsafeArchiveError(ValueError):
    """An archive member would land outside the target folder (or is not a plain file/folder/inner link)."""


def _inside(name: str) -> PurePosixPath:
    """The member path, or UnsafeArchiveError if it is absolute or climbs out with ``..``."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or (path.parts and ":" in path.parts[0]) or ".." in path.parts:
        raise UnsafeArchiveError(f"member {name!r} points outside the target folder")
    return path


def _check_link(member: str, link: str, relative_to: PurePosixPath) -> None:
    """A link target, resolved against ``relative_to`` without touching the disk, must stay inside."""
    target = PurePosixPath(link.replace("\\", "/"))
    if target.is_absolute():
        raise UnsafeArchiveError(f"member {member!r} links to the absolute path {link!r}")
    depth = 0
    for part in (relative_to / target).parts:
        depth += -1 if part == ".." else (0 if part == "." else 1)
        if depth < 0:
            raise UnsafeArchiveError(f"member {member!r} links to {link!r}, outside the target folder")


def check_tar(archive: tarfile.TarFile, where: Path) -> None:
    for member in archive.getmembers():
        try:
            path = _inside(member.name)
            if member.issym():
                _check_link(member.name, member.linkname, path.parent)
            elif member.islnk():
                _check_link(member.name, member.linkname, PurePosixPath("."))
            elif not (member.isfile() or member.isdir()):
                raise UnsafeArchiveError(f"member {member.name!r} is a device or fifo")
        except UnsafeArchiveError as err:
            raise UnsafeArchiveError(f"{where}: refusing the archive: {err}") from None


def check_tar_end(archive: tarfile.TarFile, file: Path) -> None:
    """After ``getmembers()``: the end-of-archive marker (1024 zero bytes) follows the last member."""
    with open(file, "rb") as handle:
        handle.seek(archive.offset)
        end = handle.read(2 * tarfile.BLOCKSIZE)
    if len(end) < 2 * tarfile.BLOCKSIZE or end.strip(b"\0"):
        raise UnsafeArchiveError(
            f"{file}: the tar archive is cut short (no end-of-archive blocks after its last member, at byte "
            f"{archive.offset}): an incomplete download"
        )


def check_zip(archive: zipfile.ZipFile, where: Path) -> None:
    for info in archive.infolist():
        try:
            _inside(info.filename)
            if stat.S_ISLNK(info.external_attr >> 16):
                raise UnsafeArchiveError(f"member {info.filename!r} is a symbolic link")
        except UnsafeArchiveError as err:
            raise UnsafeArchiveError(f"{where}: refusing the archive: {err}") from None


def unpack(file: Path, folder: Path, kind: str) -> None:
    """Check every member of ``file``, then unpack it into ``folder``."""
    if kind not in ARCHIVE_KINDS:
        raise ValueError(f"unknown archive kind {kind!r}; expected one of {', '.join(ARCHIVE_KINDS)}")
    try:
        if kind == "zip":
            with zipfile.ZipFile(file) as archive:
                check_zip(archive, file)
                archive.extractall(folder)
        else:
            with tarfile.open(file, "r:gz" if kind == "tar.gz" else "r:") as archive:
                check_tar(archive, file)
                if kind == "tar":
                    check_tar_end(archive, file)
                archive.extractall(folder, filter="data")  # our checks first; the stdlib's as a second guard
    except (tarfile.TarError, zipfile.BadZipFile, EOFError) as err:
        raise UnsafeArchiveError(f"{file}: not a readable {kind} archive ({err})") from None


def _find_root(folder: Path, marker: str) -> Path | None:
    """``folder`` or a folder up to two levels below it that holds ``marker``."""
    for candidate in (folder, *folder.glob("*"), *folder.glob("*/*")):
        if candidate.is_dir() and (candidate / marker).is_file():
            return candidate
    return None


def extract_archive(file: Path, target: Path, kind: str, marker: str) -> None:
    """Unpack ``file`` so that ``target/marker`` exists; ``target`` appears whole or not at all."""
    from sentcl.files.atomic import atomic_dir_write

    staging = target.parent / f".unpack-{target.name}-{uuid.uuid4().hex[:8]}"
    try:
        try:
            unpack(file, staging, kind)
        except UnsafeArchiveError:
            file.unlink(missing_ok=True)  # never reuse a refused archive
            raise
        root = _find_root(staging, marker)
        if root is None:
            raise UnsafeArchiveError(f"{file}: archive has no {marker}; not the expected file")
        atomic_dir_write(target, lambda tmp: root.rename(tmp))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
