"""sentcl's one YAML dialect: the YAML 1.2 core schema, and a refusal of the plain scalars that YAML 1.1 reads as
another value.

PyYAML resolves plain scalars by YAML 1.1's rules: ``010`` is the octal 8, ``1:30`` is the base-60 number 90,
``yes``/``no``/``on``/``off`` are booleans, ``1_000`` is 1000, while ``1e-5`` (no dot) stays a string. A recipe,
a grid and a ``--set`` value are read here by the YAML 1.2 core schema instead (YAML 1.2, section 10.3): booleans are
``true``/``false`` (any of three cases), integers are decimal, ``0o`` octal or ``0x`` hexadecimal, floats need no
dot, and everything else is a string. A plain scalar that YAML 1.1 reads as a boolean or a number *different* from
its YAML 1.2 value is refused, naming the key and the line: the two dialects' readers (PyYAML and ruamel, an
editor's linter, a colleague's script) would disagree about what the file says, so sentcl asks the writer to
spell it one way (``10``, ``0o10``, ``"1:30"``, ``true``). Timestamps stay strings (no sentcl setting is a date).
"""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

import yaml

_STR = "tag:yaml.org,2002:str"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_NULL = "tag:yaml.org,2002:null"

# the YAML 1.2 core schema's plain-scalar rules (YAML 1.2.2, 10.3.2), in PyYAML's (tag, regexp, first chars) form
_CORE_12 = (
    (_NULL, re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]),
    (_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")),
    (_INT, re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789")),
    (
        _FLOAT,
        re.compile(
            r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
        ),
        list("-+.0123456789"),
    ),
)
_KEEP = {"tag:yaml.org,2002:merge", "tag:yaml.org,2002:value", "tag:yaml.org,2002:yaml"}


def core_12_int(text: str) -> int:
    """A YAML 1.2 core integer's value (``[-+]?[0-9]+``, ``0o`` octal, ``0x`` hexadecimal)."""
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


def core_12_float(text: str) -> float:
    """A YAML 1.2 core float's value (``.inf``, ``-.Inf``, ``.nan`` spelled as YAML spells them)."""
    bare = text.lstrip("+-").lower()
    if bare == ".inf":
        return -math.inf if text.startswith("-") else math.inf
    if bare == ".nan":
        return math.nan
    return float(text)


def _resolvers() -> dict[Any, list[tuple[str, re.Pattern[str]]]]:
    table: dict[Any, list[tuple[str, re.Pattern[str]]]] = {}
    for first, rules in yaml.SafeLoader.yaml_implicit_resolvers.items():
        kept = [(tag, rx) for tag, rx in rules if tag in _KEEP]
        if kept:
            table[first] = kept
    for tag, regexp, firsts in _CORE_12:
        for first in firsts:
            table.setdefault(first, []).append((tag, regexp))
    return table


class Core12Loader(yaml.SafeLoader):
    """SafeLoader resolving plain scalars by the YAML 1.2 core schema (the module docstring)."""

    yaml_implicit_resolvers = _resolvers()

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:  # type: ignore[override]
        return core_12_int(str(self.construct_scalar(node)))

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:  # type: ignore[override]
        return core_12_float(str(self.construct_scalar(node)))


Core12Loader.add_constructor(_INT, Core12Loader.construct_yaml_int)
Core12Loader.add_constructor(_FLOAT, Core12Loader.construct_yaml_float)

_LEGACY = yaml.SafeLoader("")  # resolves and constructs a scalar by YAML 1.1's rules (PyYAML's own)
_MODERN = Core12Loader("")
_PLAIN = (True, False)  # PyYAML's "implicit" flags of a plain scalar


def _value(loader: yaml.SafeLoader, tag: str, text: str) -> Any:
    """``text`` constructed as ``tag`` by ``loader``'s rules (uncached: ``construct_object`` would memoise)."""
    try:
        return loader.yaml_constructors[tag](loader, yaml.ScalarNode(tag, text))
    except (ValueError, KeyError, yaml.YAMLError):
        return text


def legacy_conflict(text: str) -> tuple[Any, Any] | None:
    """(YAML 1.1 value, YAML 1.2 value) of the plain scalar ``text`` when YAML 1.1 reads it as a boolean or a
    number that YAML 1.2's core schema does not give; None when the two agree (or 1.1 reads a string or a
    date: 1.2's reading is then the one meant)."""
    old_tag = _LEGACY.resolve(yaml.ScalarNode, text, _PLAIN)
    if old_tag not in (_BOOL, _INT, _FLOAT):
        return None
    old = _value(_LEGACY, old_tag, text)
    new = _value(_MODERN, _MODERN.resolve(yaml.ScalarNode, text, _PLAIN), text)
    same = type(old) is type(new) and (old == new or (old != old and new != new))
    return None if same else (old, new)


class LegacyScalar(NamedTuple):
    """A plain scalar that YAML 1.1 and 1.2 read differently: where it is and both readings."""

    line: int
    key: str
    text: str
    old: Any
    new: Any


def find_legacy_scalar(node: yaml.Node) -> LegacyScalar | None:
    """The first plain scalar under ``node`` (keys and values, aliases once) whose YAML 1.1 and 1.2 values
    differ (``legacy_conflict``), with its dotted key ('' for a top-level scalar); None when there is none."""
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, str]] = [(node, "")]
    while stack:
        current, key = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, yaml.ScalarNode):
            found = legacy_conflict(current.value) if current.style is None else None
            if found is not None:
                line = current.start_mark.line + 1 if current.start_mark is not None else 1
                return LegacyScalar(line, key, current.value, *found)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend((child, f"{key}[{i}]") for i, child in reversed(list(enumerate(current.value))))
        elif isinstance(current, yaml.MappingNode):
            for key_node, value_node in reversed(current.value):
                name = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
                dotted = f"{key}.{name}" if key else name
                stack.extend([(value_node, dotted), (key_node, dotted)])
    return None


def legacy_advice(found: LegacyScalar) -> str:
    """How to write ``found`` so that both dialects read one value."""
    old, new = found.old, found.new
    if isinstance(old, bool):
        return f"true or false for a boolean, or quote it ('{found.text}') for text"
    if isinstance(old, int) and isinstance(new, int):
        return f"{new} for the decimal number, or 0o{old:o} for the octal one"
    return f"the number as plain digits ({old}), or quote it ('{found.text}') for text"
