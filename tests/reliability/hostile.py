"""Hostile generators per slot kind (``sentcl.files.slots.KINDS``): what the matrix throws at every slot of
that kind. A generator makes one value (writing what it needs under a folder: a FIFO, a link loop, a user's
file) and says whether the value must be refused (``bad``) or may be accepted (a limit that is still valid:
then the command must succeed). ``keep`` names a user's file the command must leave byte for byte.

``syntactic`` generators need no file system and are refused by the option's own ``type=`` reader (the
parse-level matrix runs them for every slot of every command); the others go through the command itself.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Made:
    value: str
    keep: Path | None = None  # a user's file or folder that must come out unchanged


@dataclass(frozen=True)
class Gen:
    name: str
    make: Callable[[Path], Made]
    bad: bool = (
        True  # must be refused (exit 2, one line); False: a valid limit, must succeed or be refused clearly
    )
    syntactic: bool = False  # refused by the type= reader, no file system needed

    def __call__(self, folder: Path) -> Made:
        return self.make(folder)


def _const(name: str, value: str, bad: bool = True) -> Gen:
    return Gen(name, lambda _folder: Made(value), bad=bad, syntactic=bad)


def _fifo(folder: Path) -> Made:
    path = folder / "fifo"
    os.mkfifo(path)
    return Made(str(path))


def _loop(folder: Path) -> Made:
    (folder / "loopA").symlink_to("loopB")
    (folder / "loopB").symlink_to("loopA")
    return Made(str(folder / "loopA"))


def _dangling(folder: Path) -> Made:
    (folder / "dangling").symlink_to("nowhere")
    return Made(str(folder / "dangling"))


def _dir(folder: Path) -> Made:
    (folder / "a_dir").mkdir()
    return Made(str(folder / "a_dir"))


def _file(name: str, data: bytes) -> Callable[[Path], Made]:
    def make(folder: Path) -> Made:
        (folder / name).write_bytes(data)
        return Made(str(folder / name))

    return make


def _user_file(folder: Path) -> Made:
    path = folder / "users_notes.npy"
    path.write_bytes(b"the user's own file\n")
    return Made(str(path), keep=path)


def _user_folder(folder: Path) -> Made:
    path = folder / "users_folder"
    path.mkdir()
    (path / "NOTES.md").write_text("mine")
    return Made(str(path), keep=path)


def _npy(name: str, array: np.ndarray) -> Callable[[Path], Made]:
    def make(folder: Path) -> Made:
        np.save(folder / name, array, allow_pickle=array.dtype == object)
        return Made(str(folder / name))

    return make


def _npz(folder: Path) -> Made:
    np.savez(folder / "a.npz", a=np.ones((4, 32), dtype=np.float32))
    os.replace(folder / "a.npz", folder / "archive.npy")
    return Made(str(folder / "archive.npy"))


SURROGATE = "for\udceat"  # what argv gives for the Latin-1 byte 0xEA in a UTF-8 locale
FS_READ = [
    Gen("missing", lambda f: Made(str(f / "missing"))),
    _const("empty-string", ""),
    Gen("directory", _dir),
    Gen("fifo", _fifo),
    Gen("char-device", lambda _f: Made("/dev/zero")),
    Gen("symlink-loop", _loop),
    Gen("dangling-link", _dangling),
]
FILE_READ = [
    *FS_READ,
    Gen("empty-file", _file("empty.txt", b"")),
    Gen("not-utf8", _file("latin1.txt", "café\n".encode("latin-1"))),
    Gen("binary", _file("binary.txt", bytes(range(256)) * 4)),
]
FOLDER_READ = [
    # a missing folder is named by the command that reads it (with how to get it: a data folder); an option
    # the command does not read (--data-dir beside --pairs) is not looked at
    Gen("missing", lambda f: Made(str(f / "missing")), bad=False),
    *[g for g in FS_READ if g.name not in ("directory", "missing")],
    Gen("a-file", _file("a_file.txt", b"text\n")),
    Gen("empty-folder", _dir, bad=False),  # a real folder: read (nothing found is named) or refused clearly
]
WRITE = [
    Gen("user-file", _user_file),
    Gen("directory", _dir),
    Gen("fifo", _fifo),
    Gen("symlink-loop", _loop),
    _const("empty-string", ""),
    Gen("under-a-file", lambda f: Made(str(_file("plain", b"x")(f).value) + "/out")),
]
OWN = [
    Gen("user-folder", _user_folder),
    Gen("a-file", _file("a_file.txt", b"text\n")),
    Gen("fifo", _fifo),
    Gen("symlink-loop", _loop),
    Gen("dangling-link", _dangling),
    _const("empty-string", ""),
]
COUNT = [_const(n, v) for n, v in [("zero", "0"), ("negative", "-1"), ("word", "abc"), ("fraction", "1.5"),
                                   ("empty", ""), ("nan", "nan"), ("surrogate", SURROGATE)]]  # fmt: skip
FLOAT = [_const(n, v) for n, v in [("nan", "nan"), ("inf", "inf"), ("minus-inf", "-inf"), ("word", "abc"),
                                   ("empty", ""), ("overflow", "1e999")]]  # fmt: skip
TEXT_BAD = [_const("not-utf8", SURROGATE), _const("lone-surrogate", "a\ud83d")]

GENERATORS: dict[str, list[Gen]] = {
    "path-read": FILE_READ,
    "folder-read": FOLDER_READ,
    "path-any-read": FS_READ,
    "path-write": WRITE,
    "folder-own": OWN,
    "model": [*FOLDER_READ[:-1], Gen("garbage-config", _file("config.json", b"{not json"))],
    "recipe": [*FILE_READ[:-2], Gen("control-char", _file("bell.yaml", b"a: \x07\n"))],
    "array": [
        *FILE_READ,
        Gen("npz-archive", _npz),
        Gen("pickle", _file("p.npy", pickle.dumps([1, 2]))),
        Gen("text", _file("t.npy", b"hello world\n")),
        Gen("nan-rows", _npy("nan.npy", np.full((4, 32), np.nan, np.float32))),
        Gen("zero-rows", _npy("zero.npy", np.zeros((4, 32), np.float32))),
        Gen("complex", _npy("c.npy", np.ones((4, 32), np.complex64))),
        Gen("wrong-width", _npy("w.npy", np.ones((4, 7), np.float32))),
        Gen("objects", _npy("o.npy", np.array([{"a": 1}], dtype=object))),
    ],
    "secret": [_const("empty", ""), _const("blank", "   "), _const("two-lines", "a\nb")],
    "secret-file": [*FILE_READ, Gen("huge", _file("huge.key", b"k" * 100_000))],
    "text": TEXT_BAD,
    "name": [_const("empty", ""), *TEXT_BAD],
    "names": [_const("empty", ""), *TEXT_BAD],
    "setting": TEXT_BAD,
    "url": [_const("not-http", "ftp://example.org/x"), _const("empty", "")],
    "count": COUNT,
    "integer": [_const("word", "abc"), _const("fraction", "1.5"), _const("empty", ""), _const("nan", "nan")],
    "max-length": [*COUNT, _const("two", "2")],
    "dims": [_const("empty", ""), _const("zero", "0"), _const("words", "a,b"), _const("negative", "4,-1")],
    "float": FLOAT,
    "duration": [*FLOAT, _const("negative", "-1")],
    "probability": [*FLOAT, _const("over-one", "1.5"), _const("negative", "-0.1")],
    "range": [_const("one", "1"), _const("reversed", "2,1"), _const("words", "a,b"), _const("nan", "nan,1")],
    "port": [_const("negative", "-1"), _const("over", "65536"), _const("word", "abc"), _const("empty", "")],
    "choice": [_const("unknown", "zzz-not-a-choice"), _const("empty", "")],
    # a command-line flag takes no value (present or absent); a configuration flag is a YAML 1.2 boolean
    "flag": [_const("yaml11-yes", "yes"), _const("two", "2"), _const("nan", "nan")],
    "list": [_const("mapping", "{a: 1}"), _const("nan", "nan"), *TEXT_BAD],
    "mapping": [_const("list", "[1, 2]"), _const("number", "3")],
    "texts": [],  # request fields only: HTTP_GENERATORS
    "token-ids": [],
}

# JSON values for the fields of the service's requests (the HTTP part of the matrix): (name, raw JSON text)
HTTP_VALUES: list[tuple[str, str]] = [
    ("null", "null"),
    ("true", "true"),
    ("float", "1.5"),
    ("huge-int", "1" + "0" * 30),
    ("negative", "-1"),
    ("zero", "0"),
    ("nan-token", "NaN"),
    ("empty-string", '""'),
    ("blank", '"   \\u200b "'),
    ("lone-surrogate", '"a\\ud83d"'),
    ("object", '{"a": 1}'),
    ("nested-lists", "[[[[]]]]"),
    ("empty-list", "[]"),
    ("long-text", '"' + "word " * 60_000 + '"'),
    ("many-texts", "[" + ",".join(['"x"'] * 5_000) + "]"),
    ("id-out-of-vocab", "[999999999]"),
    ("deep", "[" * 5_000 + "]" * 5_000),
]
HTTP_KINDS = ("texts", "token-ids", "text", "flag", "integer", "choice", "count")
