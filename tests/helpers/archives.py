"""Tar archives built in memory for the download tests: regular members, and symbolic or hard links (the
members a safe extraction must refuse)."""

from __future__ import annotations

import io
import tarfile


def tar_archive(
    members: dict[str, bytes],
    links: dict[str, str] | None = None,
    hard: dict[str, str] | None = None,
    compression: str = "",
) -> bytes:
    """The bytes of a tar file holding ``members`` (name -> content), then the symbolic ``links`` and the hard
    links ``hard`` (name -> target); ``compression`` "gz" gzips it."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=f"w:{compression}") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for kind, named in ((tarfile.SYMTYPE, links), (tarfile.LNKTYPE, hard)):
            for name, target in (named or {}).items():
                info = tarfile.TarInfo(name)
                info.type, info.linkname = kind, target
                archive.addfile(info)
    return buffer.getvalue()
