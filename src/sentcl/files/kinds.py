"""The typed readers of command-line values (argparse ``type=`` functions), one per slot kind (``sentcl.files.slots.KINDS``): an option
declares its kind by its ``type=`` (``type=read_file``, ``type=secret``, ...), which the slot catalogue reads
and the hostile matrix then tests with that kind's generators.

Each returns what the command used before (a ``Path``, a ``str``, a number) after the checks that need no
file system: a path is not empty; text is UTF-8 (argv's undecodable bytes come as surrogates: one line naming
the byte, never a tokenizer's traceback); a secret is not empty; a number is finite. What a path holds is read
later by the one reader of its kind (``sentcl.files.pathcheck``, ``sentcl.files.arrays``,
``sentcl.files.secret``), which names the option.
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

from sentcl.files.pathcheck import input_dir_problem, input_file_problem
from sentcl.files.secret import SecretError, check_secret
from sentcl.files.slots import declare


def _not_utf8(text: str) -> str | None:
    """Where ``text`` (from argv, decoded with surrogateescape) holds a byte that is not UTF-8, or None."""
    for i, ch in enumerate(text):
        if 0xDC80 <= ord(ch) <= 0xDCFF:
            return f"holds bytes that are not UTF-8 (\\x{ord(ch) - 0xDC00:02x} at character {i})"
        if 0xD800 <= ord(ch) <= 0xDFFF:
            return f"holds a lone surrogate (U+{ord(ch):04X} at character {i})"
    return None


def _path(text: str) -> Path:
    if not text:
        raise argparse.ArgumentTypeError("an empty path")
    return Path(text)


def _existing(text: str, folder: bool) -> Path:
    """``text`` as a path; one that exists but is not what the slot reads (a folder, a FIFO, a device, a link
    loop where a file is read; a file or special file where a folder is read) is refused now, in
    ``sentcl.files.pathcheck``'s words. A missing path is the command's to name (it may make or fetch it)."""
    path = _path(text)
    if not os.path.lexists(path):
        return path
    found = input_dir_problem(path) if folder else input_file_problem(path)
    if found is not None and not found[1]:
        raise argparse.ArgumentTypeError(f"{path} {found[0]}")
    return path


@declare("path-read")
def read_file(text: str) -> Path:
    return _existing(text, folder=False)


@declare("folder-read")
def read_folder(text: str) -> Path:
    return _existing(text, folder=True)


@declare("path-any-read")
def read_path(text: str) -> Path:
    return _path(text)


@declare("path-write")
def write_path(text: str) -> Path:
    return _path(text)


@declare("folder-own")
def own_folder(text: str) -> Path:
    return _path(text)


@declare("folder-own")
def own_folder_name(text: str) -> str:
    """A folder to own, kept as text (a command that resolves it later)."""
    return str(_path(text))


@declare("folder-read")
def read_folder_name(text: str) -> str:
    """A folder to read, kept as text (a data folder, run folders)."""
    return str(_existing(text, folder=True))


@declare("path-read")
def read_source(text: str) -> str:
    """A file to read that may live on object storage, kept as text: a URI (``s3://bucket/key``) as given,
    else a local file, checked as ``read_file`` checks it."""
    return text if "://" in text else str(_existing(text, folder=False))


@declare("folder-read")
def read_index_location(text: str) -> str | Path:
    """An index to read: an object-storage URI (``s3://bucket/prefix``) as given, else a local folder
    (``Path`` would fold ``s3://`` into ``s3:/``)."""
    return text if "://" in text else _existing(text, folder=True)


@declare("folder-own")
def own_index_location(text: str) -> str | Path:
    """An index or store to write (or a search cache): an object-storage URI as given, else a local folder."""
    return text if "://" in text else _path(text)


@declare("array")
def array_file(text: str) -> Path:
    return _existing(text, folder=False)


@declare("secret-file")
def secret_file(text: str) -> Path:
    return _path(text)


@declare("model")
def model_name(text: str) -> str:
    """A model folder, hub id or short name: not empty."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty model name: give a folder, a hub id or a short name")
    return text


@declare("recipe")
def recipe(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty recipe: give a built-in name or a YAML file")
    return text


@declare("text")
def text_value(text: str) -> str:
    problem = _not_utf8(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


@declare("name")
def name_value(text: str) -> str:
    problem = _not_utf8(text) or ("is empty" if not text.strip() else None)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


@declare("names")
def names_value(text: str) -> str:
    return name_value(text)


@declare("setting")
def setting(text: str) -> str:
    problem = _not_utf8(text)  # its shape (KEY=VALUE) and value are the typed config's to check
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


@declare("url")
def url(text: str) -> str:
    if not text.startswith(("http://", "https://")):
        raise argparse.ArgumentTypeError(f"expected an http(s) URL, got {text[:60]!r}")
    return text


@declare("secret")
def secret(text: str) -> str:
    try:
        return check_secret(text, "the key")
    except SecretError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text[:60]!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text[:60]!r}")
    return value


@declare("float")
def finite_float(text: str) -> float:
    return _number(text)


@declare("duration")
def duration(text: str) -> float:
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value:g}")
    return value


@declare("integer")
def whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text[:60]!r}") from None


@declare("range")
def number_range(text: str) -> str:
    """``LO,HI``: two finite numbers, LO below HI (the command parses the text again)."""
    parts = text.split(",")
    values = [_number(p) for p in parts] if len(parts) == 2 else []
    if len(values) != 2 or not values[0] < values[1]:
        raise argparse.ArgumentTypeError(f"expected LO,HI with LO < HI, got {text[:60]!r}")
    return text
