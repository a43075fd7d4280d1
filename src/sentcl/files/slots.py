"""The catalogue of input slots: every place a user's value enters sentcl, and its kind (bottom floor: only the
standard library).

A slot is a command-line option or argument (read from the argparse parsers), a configuration key (read from
the typed config's dataclasses), a field of an HTTP request (read from the service's request schemas) or a
kind of file sentcl reads. Its kind is declared where the slot is declared, not in a second table:

- an option's ``type=`` function carries it (``declare("count")(positive_int)``; ``sentcl.files.kinds`` holds
  the typed readers of paths, text, secrets and numbers); a flag (``store_true``) is ``flag`` and an option
  with ``choices`` is ``choice``;
- a configuration field's annotation: ``ModelRef``, ``PathRead``, ``FolderRead``, ``FolderOwn`` (a ``str``
  to the typed reader, carrying its kind), else int, float, bool, str, a list, a Literal; or its metadata
  ``kind``;
- a request field's ``json_schema_extra={"kind": ...}``, else its annotation (StrictBool, StrictInt, str,
  list[str], a Literal).

``KINDS`` lists every kind with what it accepts; ``tests/reliability/test_slot_catalogue.py`` fails when a slot
has no kind, or a kind has no hostile generators (``tests/reliability/hostile.py``), so the catalogue cannot
fall behind the code.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar, get_args, get_origin

SLOT_ATTR = "slot_kind"

#: kind -> what a value of that kind must be (one line each; docs/reliability.md shows this table)
KINDS: dict[str, str] = {
    "path-read": "a regular file to read (not a folder, FIFO, device or link loop)",
    "folder-read": "a folder to read",
    "path-any-read": "a file or a folder to read (verify)",
    "path-write": "a file (or a folder sentcl makes) to write: never an input, never the user's file",
    "folder-own": "a folder sentcl makes and owns: new, empty, or sentcl's own of that kind",
    "model": "a model: a folder of a known layout, a hub id or an offline short name",
    "recipe": "a built-in recipe name or a YAML file to read",
    "array": "a .npy array of real, finite vectors (directions: no zero row) of the expected width",
    "secret": "a non-empty key on one line",
    "secret-file": "a regular file or a pipe answering in time, holding a key (at most 4096 bytes)",
    "text": "UTF-8 text (no bytes that are not UTF-8)",
    "name": "a non-empty name (a column, a task, a variant, a host), UTF-8",
    "names": "a comma-separated list of names",
    "setting": "a KEY=VALUE override of a configuration key",
    "url": "an http(s) URL",
    "count": "a whole number > 0",
    "integer": "a whole number",
    "max-length": "a whole number of tokens >= 3",
    "dims": "comma-separated whole numbers > 0",
    "float": "a finite number",
    "duration": "a finite number >= 0 (seconds or milliseconds)",
    "probability": "a finite number in (0, 1]",
    "range": "two finite numbers LO,HI with LO < HI",
    "port": "a whole number 0-65535",
    "choice": "one of the listed choices",
    "flag": "present or absent",
    "texts": "one text or a list of texts (a request's inputs)",
    "token-ids": "text, texts, or lists of token ids of the served model's vocabulary",
    "mapping": "a mapping of settings (a configuration section)",
    "list": "a list of values",
}

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Kind:
    """A slot kind carried by an annotation: ``Annotated[str, Kind("model")]`` (the typed config's fields)."""

    name: str


# annotations of configuration fields that name a path or a model (the typed reader sees ``str``)
ModelRef = Annotated[str, Kind("model")]
PathRead = Annotated[str, Kind("path-read")]
FolderRead = Annotated[str, Kind("folder-read")]
FolderOwn = Annotated[str, Kind("folder-own")]


def declare(kind: str) -> Callable[[F], F]:
    """Mark an argparse ``type=`` function (or any reader) as reading values of ``kind``."""
    if kind not in KINDS:
        raise ValueError(f"unknown slot kind {kind!r}; add it to KINDS with what it accepts")

    def mark(fn: F) -> F:
        setattr(fn, SLOT_ATTR, kind)
        return fn

    return mark


@dataclass(frozen=True)
class Slot:
    """One input slot: ``surface`` (cli, config, http, file), ``where`` (how a user names it), ``kind``
    (None: not declared, which the catalogue's test refuses), and for the command line the argv prefix of its
    command (``command``), its option string (``flag``; None for a positional) and ``choices``."""

    surface: str
    where: str
    kind: str | None
    command: tuple[str, ...] = ()
    flag: str | None = None
    choices: tuple[Any, ...] | None = None
    default: Any = None


def _action_kind(action: argparse.Action) -> str | None:
    if isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction | argparse._CountAction):  # noqa: SLF001
        return "flag"
    declared = getattr(action.type, SLOT_ATTR, None)
    if declared is not None:
        return declared
    if action.choices is not None:
        return "choice"
    return None


def cli_slots(parser: argparse.ArgumentParser, command: tuple[str, ...] = ()) -> list[Slot]:
    """Every option and positional argument of every (sub)command of ``parser``; help and version left out."""
    slots: list[Slot] = []
    for action in parser._actions:  # noqa: SLF001 - argparse has no public list of its actions
        if isinstance(action, argparse._HelpAction | argparse._VersionAction):  # noqa: SLF001
            continue
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for name, sub in action.choices.items():
                slots += cli_slots(sub, (*command, name))
            continue
        flag = action.option_strings[-1] if action.option_strings else None
        where = f"{' '.join(command) or 'sentcl'} {flag or action.dest}"
        choices = tuple(action.choices) if action.choices is not None else None
        slots.append(Slot("cli", where, _action_kind(action), command, flag, choices, action.default))
    return slots


_SCALARS = {bool: "flag", int: "integer", float: "float", str: "text"}


def annotation_kind(annotation: Any) -> str | None:
    """The kind an annotation says by itself: a ``Kind`` it carries (``ModelRef``), bool, int, float, str, a
    Literal, a list, a mapping; an Optional of one of these; None for anything else (it must declare its
    kind)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        declared = [m.name for m in annotation.__metadata__ if isinstance(m, Kind)]
        return declared[0] if declared else annotation_kind(get_args(annotation)[0])
    if origin is Literal:
        return "choice"
    if origin in (typing.Union, types.UnionType):
        kinds = {annotation_kind(a) for a in get_args(annotation) if a is not type(None)}
        if kinds == {"text", "texts"} or kinds == {"text", "list"}:
            return "texts"
        return kinds.pop() if len(kinds) == 1 else None
    if origin in (list, tuple):
        inner = get_args(annotation)
        return "texts" if inner and inner[0] is str else "list"
    if origin is dict or annotation is dict:
        return "mapping"
    for base, kind in _SCALARS.items():
        if annotation is base or (isinstance(annotation, type) and issubclass(annotation, base)):
            return kind
    return None


def config_slots(cls: type[Any], prefix: str = "") -> list[Slot]:
    """Every leaf key of the typed config ``cls`` (dataclasses): its kind from the field's metadata ``kind``,
    else from its annotation; a section (a nested dataclass) is walked."""
    slots: list[Slot] = []
    hints = typing.get_type_hints(cls, include_extras=True)
    for f in dataclasses.fields(cls):
        key, annotation = f"{prefix}{f.name}", hints[f.name]
        if dataclasses.is_dataclass(annotation) and "kind" not in f.metadata:
            slots += config_slots(annotation, key + ".")  # type: ignore[arg-type]
            continue
        kind = f.metadata.get("kind") or annotation_kind(annotation)
        slots.append(Slot("config", key, kind))
    return slots


def schema_slots(route: str, model: Any) -> list[Slot]:
    """Every field of a request schema (a pydantic model class, duck-typed: ``model_fields``); a nested model
    is walked."""
    slots: list[Slot] = []
    for name, info in model.model_fields.items():
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        annotation = info.annotation
        if hasattr(annotation, "model_fields") and "kind" not in extra:
            slots += schema_slots(f"{route} {name}.", annotation)
            continue
        kind = extra.get("kind") or annotation_kind(_strip_strict(annotation))
        slots.append(Slot("http", f"{route} {name}".replace(". ", "."), kind))
    return slots


def _strip_strict(annotation: Any) -> Any:
    """pydantic's StrictInt/StrictBool are Annotated[int/bool, Strict()]: their base type."""
    if get_origin(annotation) is typing.Annotated:
        return get_args(annotation)[0]
    args = get_args(annotation)
    origin = get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(_strip_strict(a) for a in args)]  # noqa: UP007 - rebuilt at run time
    if origin in (list, tuple) and args:
        return (
            origin[tuple(_strip_strict(a) for a in args)] if origin is tuple else list[_strip_strict(args[0])]
        )
    return annotation


def file_slots(kinds: Iterable[tuple[str, str | None]]) -> list[Slot]:
    """File kinds sentcl reads, as (name, kind) pairs gathered from the readers' own tables."""
    return [Slot("file", name, kind) for name, kind in kinds]


def unclassified(slots: Iterable[Slot]) -> list[str]:
    """The slots without a kind, or with a kind not in ``KINDS``."""
    return [f"{s.surface}: {s.where} ({s.kind})" for s in slots if s.kind not in KINDS]
