"""The one reader of secrets (an API key), however it comes: a command-line value, an environment variable or a
key file (bottom floor: only the standard library and ``pathcheck``).

- A value given but empty or blank is refused, whichever way it came: ``--api-key "$KEY"`` with KEY unset
  gives ``--api-key ''``, which must not turn authentication off without a word.
- A key file is a regular file, or a pipe (``--api-key-file <(pass show key)``) that answers within
  ``PIPE_TIMEOUT_S`` seconds; a FIFO nobody writes to is refused after that time instead of blocking the start
  for ever. A directory, a device or a socket is refused at once (``pathcheck``'s words).
- At most ``MAX_SECRET_BYTES`` bytes are read: ``/dev/zero`` or a huge file cannot grow the process.
"""

from __future__ import annotations

import os
import select
import stat
import time
from pathlib import Path

from sentcl.files.pathcheck import input_file_problem

MAX_SECRET_BYTES = 4096  # longer than any key; a file over it is not a key file
PIPE_TIMEOUT_S = 5.0  # how long a pipe may take to give its key


class SecretError(ValueError):
    """A secret that is empty, unreadable, too long or not one line; ``str()`` names where it came from."""


def check_secret(value: str, what: str) -> str:
    """``value`` stripped; SecretError when it is empty or blank, or holds several lines (``what`` names the
    slot: "--api-key", "$SENTCL_API_KEY")."""
    key = value.strip()
    if not key:
        shown = "empty" if not value else "blank (only spaces)"
        raise SecretError(
            f'{what} is {shown}: give the key (an unset variable, as in --api-key "$KEY", gives an empty '
            "one), or give none to serve without authentication"
        )
    if "\n" in key or "\r" in key:
        raise SecretError(f"{what} holds several lines: give the key alone on one line")
    if "\x00" in key or any(ord(ch) < 32 for ch in key):
        raise SecretError(f"{what} holds a control character: a key is printable text")
    return key


def _read_pipe(fd: int, path: Path, what: str, timeout: float) -> bytes:
    """Up to ``MAX_SECRET_BYTES + 1`` bytes of the pipe ``fd`` (opened non-blocking) until its writer closes
    it; SecretError when nothing arrives within ``timeout`` seconds."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_SECRET_BYTES:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(int(left * 1000) + 1):
            raise SecretError(
                f"{what} {path} is a pipe that gave no key within {timeout:g} s (a FIFO nobody writes to?): "
                "write the key into it, or use a regular file"
            )
        chunk = os.read(fd, MAX_SECRET_BYTES + 1 - size)
        if not chunk:
            break  # the writer closed the pipe
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_secret_file(path: str | os.PathLike[str], what: str, timeout: float = PIPE_TIMEOUT_S) -> str:
    """The key in the file ``path``: its one line, surrounding whitespace removed (``check_secret``)."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = 0
    if not stat.S_ISFIFO(mode):
        found = input_file_problem(path)
        if found is not None:
            raise SecretError(
                f"{what} {path}: cannot read it: it {found[0].removeprefix('is ')}"
                if found[1]
                else f"{what} {path} {found[0]}"
            )
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        raise SecretError(f"{what} {path}: cannot read it: {err.strerror}") from None
    try:
        if stat.S_ISFIFO(mode):
            raw = _read_pipe(fd, path, what, timeout)
        else:
            raw = os.read(fd, MAX_SECRET_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_SECRET_BYTES:
        raise SecretError(f"{what} {path} holds over {MAX_SECRET_BYTES} bytes: not a key file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SecretError(f"{what} {path}: cannot read it: not UTF-8 text") from None
    if not text.strip():
        raise SecretError(f"{what} {path} is empty: write the key on its one line")
    return check_secret(text, f"{what} {path}")
