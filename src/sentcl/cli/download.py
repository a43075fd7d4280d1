"""``sentcl download wiki1m nli senteval``: the papers' data, into the data folder's layout."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from sentcl.cli.options import add_data_dir
from sentcl.files.kinds import url
from sentcl.files.paths import DATA_DIR_DEFAULT_TEXT, default_data_dir


def add_parser(sub: argparse._SubParsersAction) -> None:
    from sentcl.data.download import MIRROR_ENV, SOURCES

    p = sub.add_parser(
        "download",
        help="Download the papers' data (wiki1m, nli, senteval) into the data folder.",
        description="; ".join(f"{k}: {s.about} -> <data-dir>/{s.target}" for k, s in SOURCES.items()),
    )
    p.add_argument("names", nargs="+", choices=list(SOURCES), metavar="NAME", help=", ".join(SOURCES))
    # every command's --data-dir: each source's place in the folder is claimed, the rest of it left alone
    add_data_dir(p, f"Folder to fill (created if missing; default {DATA_DIR_DEFAULT_TEXT}).")
    p.add_argument(
        "--mirror",
        type=url,
        default=os.environ.get(MIRROR_ENV),
        help=f"Fetch each file from MIRROR/<file name> instead (default ${MIRROR_ENV}).",
    )
    p.add_argument(
        "--force",
        "--overwrite",
        dest="force",
        action="store_true",
        help="Download again even when the data is already there, replacing what sentcl downloaded (never a "
        "folder of other files); the cached archive and .part are discarded; a sum recorded by an earlier "
        "download is still checked.",
    )
    p.add_argument(
        "--forget-sum",
        action="store_true",
        help="Discard the sha256 that an earlier download recorded (trust on first use) with the cached files, "
        "and download again: when that first download was bad or the file has legitimately changed.",
    )
    p.set_defaults(func=handle)


def _data_dir(arg: str | None) -> Path:
    folder = Path(arg) if arg is not None else default_data_dir()
    from sentcl.data.download import DownloadError

    if folder.exists() and not folder.is_dir():
        raise DownloadError(f"data folder {folder} is a file, not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def handle(args: argparse.Namespace) -> int:
    from sentcl.data.download import SOURCES, DownloadError, download, with_mirror

    try:
        data_dir = _data_dir(args.data_dir)
        sources = with_mirror(SOURCES, args.mirror)
        paths = download(args.names, data_dir, sources, force=args.force, forget_sum=args.forget_sum)
    except DownloadError:
        raise
    except (PermissionError, IsADirectoryError, NotADirectoryError, FileExistsError) as err:
        raise DownloadError(f"{err.filename}: {err.strerror}; choose a writable --data-dir") from None
    for name, path in zip(dict.fromkeys(args.names), paths, strict=True):
        print(f"{name}: {path}")
    return 0
