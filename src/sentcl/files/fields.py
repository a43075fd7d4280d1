"""The types of the fields of the files sentcl writes and reads back (index settings, summaries, results,
caches, run folders), checked in one pass that names the file and the field on a mismatch.

A spec is a tree of ``Kind`` values: ``Int``, ``Real``, ``Text``, ``Flag``, ``Seq``, ``Record`` (a JSON object
with named fields), ``Table`` (an object of one value kind), ``Maybe`` (or null) and ``Anything``. ``check``
walks a value against a spec and raises ``FieldError`` for the first field that does not fit:
``results.json: results.stsb_dev: must be a number, got 'x'``. A boolean is never a number (JSON's ``true`` is
not 1), a number is finite unless the spec says otherwise, and a whole number must be an integer in JSON
(``600``, not ``"600"`` or ``600.5``). ``sentcl.files.read.read_typed_json`` reads a file and checks it.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class FieldError(ValueError):
    """A field of a file does not have the type or range sentcl wrote it with; the message names both."""


def _show(value: Any) -> str:
    short = reprlib.Repr()
    short.maxstring = short.maxother = 40
    short.maxlist = short.maxdict = 4
    return short.repr(value)


def _kind_of(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "text", bool: "a boolean", type(None): "null"}
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


class Kind:
    """One field's type; ``problem`` says what is wrong with ``value`` (None: it fits)."""

    def describe(self) -> str:
        raise NotImplementedError

    def problem(self, value: Any, where: str) -> tuple[str, str] | None:
        """(the field's dotted name, what is wrong) for the first bad field under ``value``, or None."""
        raise NotImplementedError


@dataclass(frozen=True)
class Int(Kind):
    """A whole number (not a boolean, not text) within [lo, hi]."""

    lo: int | None = None
    hi: int | None = None

    def describe(self) -> str:
        if self.lo is not None and self.hi is not None:
            return f"a whole number from {self.lo} to {self.hi}"
        if self.lo is not None:
            return f"a whole number >= {self.lo}"
        return "a whole number"

    def problem(self, value: Any, where: str) -> tuple[str, str] | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return where, f"must be {self.describe()}, got {_kind_of(value)} {_show(value)}"
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            return where, f"must be {self.describe()}, got {value}"
        return None


@dataclass(frozen=True)
class Real(Kind):
    """A number (a JSON integer counts), finite unless ``finite`` is False (null stands for NaN in sentcl's
    strict JSON: wrap in ``Maybe`` where a NaN may have been written), within [lo, hi]."""

    lo: float | None = None
    hi: float | None = None
    finite: bool = True

    def describe(self) -> str:
        bounds = "".join(
            f" {op} {bound}" for op, bound in ((">=", self.lo), ("<=", self.hi)) if bound is not None
        )
        return f"a number{bounds}"

    def problem(self, value: Any, where: str) -> tuple[str, str] | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return where, f"must be {self.describe()}, got {_kind_of(value)} {_show(value)}"
        if self.finite and not math.isfinite(value):
            return where, f"must be a finite number, got {value}"
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            return where, f"must be {self.describe()}, got {value}"
        return None


@dataclass(frozen=True)
class Text(Kind):
    """A string, one of ``choices`` when given."""

    choices: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"one of {', '.join(self.choices)}" if self.choices else "text"

    def problem(self, value: Any, where: str) -> tuple[str, str] | None:
        if not isinstance(value, str) or (self.choices and value not in self.choices):
            return where, f"must be {self.describe()}, got {_kind_of(value)} {_show(value)}"
        return None


@dataclass(frozen=True)
class Flag(Kind):
    def describe(self) -> str:
        return "true or false"

    def problem(self, value: Any, where: str) -> tuple[str, str] | None:
        if not isinstance(value, bool):
            return where, f"must be true or false, got {_kind_of(value)} {_show(value)}"
        return None


@dataclass(frozen=True)
class Anything(Kind):
    def describe(self) -> str:
        return "any value"

    def problem(self, value: Any, where: str) -> tuple[str, str] | None:
        return None


@dataclass(frozen=True)
class Maybe(Kind):
    """``kind`` or null."""

    kind: Kind

    def describe(self) -> str:
        return f"{self.kind.describe()} or null"

    def problem(self, value: Any, where: str) -> tuple[str, str] | None:
        return None if value is None else self.kind.problem(value, where)


@dataclass(frozen=True)
class Seq(Kind):
    """A list whose items are each ``item``."""

    item: Kind

    def describe(self) -> str:
        return "a list"

    def problem(self, value: Any, where: str) -> tuple[str, str] | None:
        if not isinstance(value, list):
            return where, f"must be a list, got {_kind_of(value)} {_show(value)}"
        for i, item in enumerate(value):
            found = self.item.problem(item, f"{where}[{i}]")
            if found is not None:
                return found
        return None


@dataclass(frozen=True)
class Table(Kind):
    """A JSON object whose values are each ``value`` (keys are any text)."""

    value: Kind

    def describe(self) -> str:
        return "an object"

    def problem(self, value: Any, where: str) -> tuple[str, str] | None:
        if not isinstance(value, Mapping):
            return where, f"must be an object, got {_kind_of(value)} {_show(value)}"
        for key, item in value.items():
            found = self.value.problem(item, _join(where, key))
            if found is not None:
                return found
        return None


@dataclass(frozen=True)
class Record(Kind):
    """A JSON object with ``required`` and ``optional`` named fields (other keys are kept, unchecked)."""

    required: Mapping[str, Kind] = field(default_factory=dict)
    optional: Mapping[str, Kind] = field(default_factory=dict)

    def describe(self) -> str:
        return "an object"

    def problem(self, value: Any, where: str) -> tuple[str, str] | None:
        if not isinstance(value, Mapping):
            return where, f"must be an object, got {_kind_of(value)} {_show(value)}"
        for name, kind in self.required.items():
            if name not in value:
                return _join(where, name), "is missing"
            found = kind.problem(value[name], _join(where, name))
            if found is not None:
                return found
        for name, kind in self.optional.items():
            if name in value:
                found = kind.problem(value[name], _join(where, name))
                if found is not None:
                    return found
        return None


def _join(where: str, key: Any) -> str:
    return f"{where}.{key}" if where else str(key)


def check(value: Any, spec: Kind, source: str, error: type[ValueError] = FieldError, advice: str = "") -> Any:
    """``value`` when it fits ``spec``; else ``error`` naming ``source`` (the file) and the field, then
    ``advice`` (what to do: "rebuild the index")."""
    found = spec.problem(value, "")
    if found is None:
        return value
    where, what = found
    raise error(f"{source}: {where or 'the top level'} {what}" + (f"; {advice}" if advice else ""))
