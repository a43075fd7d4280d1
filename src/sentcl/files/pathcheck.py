"""What a path given on the command line is, checked before any work: one home for every command's input and
output paths (bottom floor: only the standard library).

Inputs: ``check_input_file`` / ``check_input_dir`` say exactly what is wrong with a path that cannot be read
("does not exist", "is a directory", "is a FIFO (named pipe)", "is a symbolic link loop", "permission
denied", ...). The check uses ``os.stat`` and a non-blocking open, so a FIFO without a writer never blocks;
something that exists is never reported as missing.

Outputs: ``check_output_file`` / ``check_output_dir`` create and remove a probe file in the folder an output
will be written to, before a corpus is encoded or an index built, so a read-only folder, a read-only file
system or a kernel folder (/proc) fails at once. ``os_error_message`` turns an ``OSError`` raised while
writing into one line naming the user's path (never a ``.tmp-...`` name) and the OS's reason.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import uuid
from pathlib import Path

_KINDS = (
    (stat.S_ISDIR, "is a directory, not a file"),
    (stat.S_ISFIFO, "is a FIFO (named pipe), not a regular file"),
    (stat.S_ISSOCK, "is a socket, not a regular file"),
    (stat.S_ISCHR, "is a character device, not a regular file"),
    (stat.S_ISBLK, "is a block device, not a regular file"),
)
# the temporary names of sentcl.files.atomic (.tmp-NAME-1234abcd) and sentcl.files.output (.tmp-NAME-p42-1234abcd)
_TEMP_NAME = re.compile(r"^\.(?:tmp|unpack|old)-(.+?)(?:-p\d+(?:h[0-9a-f]{6})?)?-[0-9a-f]{8}$")


class InputPathError(ValueError):
    """An input path exists but cannot be read as asked (a FIFO, a directory, a link loop, no permission)."""


class OutputPathError(OSError):
    """An output cannot be written (checked before the work, or refused by the OS while writing); ``str()``
    is the message alone."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


def _stat_problem(path: Path) -> tuple[str, bool] | None:
    """(what is wrong, whether it is missing) from ``os.stat``, or None when ``stat`` succeeds."""
    try:
        os.stat(path)
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "is a symbolic link loop", False
        if err.errno == errno.ENOTDIR:
            return "cannot be reached: a folder on its path is a file", False
        if err.errno in (errno.EACCES, errno.EPERM):
            return "cannot be reached: permission denied on a folder above it", False
        if err.errno == errno.ENOENT:
            if os.path.islink(path):
                return f"is a symbolic link to {os.readlink(path)}, which does not exist", False
            return "does not exist", True
        return f"cannot be read: {err.strerror}", False
    return None


def input_file_problem(path: str | os.PathLike[str]) -> tuple[str, bool] | None:
    """What keeps ``path`` from being read as a regular file, and whether it is simply missing; None if fine."""
    path = Path(path)
    found = _stat_problem(path)
    if found is not None:
        return found
    mode = os.stat(path).st_mode
    for test, problem in _KINDS:
        if test(mode):
            return problem, False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        if err.errno in (errno.EACCES, errno.EPERM):
            return "cannot be read: permission denied", False
        return f"cannot be read: {err.strerror}", False
    os.close(fd)
    return None


def check_input_file(
    path: str | os.PathLike[str], what: str = "input file", error: type[ValueError] = InputPathError
) -> Path:
    """``path`` if it is a readable regular file; else FileNotFoundError (missing) or ``error`` saying what
    it is, both as ``"{what} {path} ..."``."""
    path = Path(path)
    found = input_file_problem(path)
    if found is not None:
        problem, missing = found
        raise (FileNotFoundError if missing else error)(f"{what} {path} {problem}".strip())
    return path


def input_dir_problem(path: str | os.PathLike[str]) -> tuple[str, bool] | None:
    """What keeps ``path`` from being listed as a folder, and whether it is simply missing; None if fine."""
    path = Path(path)
    found = _stat_problem(path)
    if found is None and not path.is_dir():
        mode = os.stat(path).st_mode
        kind = "is a file" if stat.S_ISREG(mode) else next(p for t, p in _KINDS if t(mode)).split(",")[0]
        found = (f"{kind}, not a folder", False)
    if found is None and not os.access(path, os.R_OK | os.X_OK):
        found = ("cannot be read: permission denied", False)
    return found


def check_input_dir(
    path: str | os.PathLike[str], what: str = "folder", error: type[ValueError] = InputPathError
) -> Path:
    """``path`` if it is a folder that can be listed; else FileNotFoundError (missing) or ``error``."""
    path = Path(path)
    found = input_dir_problem(path)
    if found is not None:
        problem, missing = found
        raise (FileNotFoundError if missing else error)(f"{what} {path} {problem}")
    return path


def _probe(folder: Path, user_path: Path, what: str) -> None:
    """Create and remove a file in ``folder``; an OSError is an OutputPathError naming ``user_path``."""
    probe = folder / f".tmp-probe-{uuid.uuid4().hex[:8]}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise OutputPathError(
            err.errno, f"cannot write {what} {user_path}: {err.strerror} (in {folder})"
        ) from None


def _existing_parent(start: Path, user: Path, what: str) -> Path:
    """The nearest folder at or above ``start`` that exists (the one ``mkdir -p`` would create below); a
    file in the way is the user's mistake, naming ``user`` (their path)."""
    for folder in (start, *start.parents):
        if folder.is_dir():
            return folder
        if os.path.lexists(folder):
            raise InputPathError(f"cannot write {what} {user}: {folder} is not a folder")
    return Path(".")


def check_output_file(path: str | os.PathLike[str], what: str = "output") -> Path:
    """Fail now, not after the work, when the file ``path`` cannot be written: it is a directory or special
    file, or its folder (or the nearest existing folder above it) refuses a new file."""
    path = Path(path)
    if os.path.lexists(path) and not path.is_file():
        found = _stat_problem(path) or next(((p, False) for t, p in _KINDS if t(os.stat(path).st_mode)), None)
        problem = found[0] if found else "is not a regular file"
        raise InputPathError(f"{what} {path} {problem}")  # the user's mistake (exit 2), not the OS's refusal
    _probe(_existing_parent(path.parent, path, what), path, what)
    return path


def check_output_dir(path: str | os.PathLike[str], what: str = "output folder", whole: bool = False) -> Path:
    """Fail now when files cannot be written in the folder ``path`` (made later if it does not exist).
    ``whole``: the folder is written beside itself and renamed into place, so its parent is probed."""
    path = Path(path)
    if os.path.lexists(path) and not path.is_dir():
        found = _stat_problem(path)
        raise InputPathError(f"{what} {path} {found[0] if found else 'is a file, not a folder'}")
    _probe(_existing_parent(path.parent if whole else path, path, what), path, what)
    return path


def user_path(filename: str | os.PathLike[str]) -> str:
    """The path a user asked for, from the name the OS reported: ``.tmp-NAME-1234abcd`` -> ``NAME``."""
    name = Path(filename)
    for i, part in enumerate(name.parts):
        match = _TEMP_NAME.match(part)
        if match:
            return str(Path(*name.parts[:i], match.group(1), *name.parts[i + 1 :]))
    return str(name)


def os_error_message(err: OSError) -> str:
    """One line for an OSError: the user's path (temporary names mapped back) and the OS's reason."""
    if isinstance(err, OutputPathError) or err.strerror is None:
        return str(err)
    where = f"{user_path(err.filename)}: " if err.filename is not None else ""
    return f"{where}{err.strerror}"


def leaves_folder(name: str) -> bool:
    """Whether a name that a file of a folder records (a model folder's module path, a manifest's file record)
    leads out of that folder: an absolute name or a '..' part. The one rule of every such record."""
    return Path(name).is_absolute() or ".." in Path(name).parts


def inside_folder(folder: str | os.PathLike[str], name: str, what: str, error: type[ValueError]) -> Path:
    """``folder / name`` for a path that a file of the folder names (modules.json's module paths, a sharded
    checkpoint's weight map), or ``error`` naming ``what`` when the name leads out of the folder: an absolute
    name or a '..' part. A sub-folder or file that is a symbolic link stays allowed (a folder assembled from
    linked parts, the Hugging Face cache's linked blobs): ``sentcl.files.fingerprint.tree_files`` walks linked
    folders, so the folder's fingerprint covers what its loading reads through them."""
    folder = Path(folder)
    if leaves_folder(name):
        raise error(
            f"{what} names {name!r}, outside the model folder {folder}: refused; copy it into the folder"
        )
    return folder / name
