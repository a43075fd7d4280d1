"""Options that contradict each other, or that do nothing without another, declared once at the command.

A command declares its rules beside its options (``declare(parser, excludes(...), needs(...))``), and ``main``
checks them (``check``) before any work, for every command alike: a rule broken is one line, exit 2, naming
both options and why. Nothing given is silently dropped (an asked-for memory budget with the allocator release
turned off; a search setting with no index to apply it to; a Ray address for the local engine).

- ``excludes(a, b, why)``: ``a`` and ``b`` given together contradict each other;
- ``needs(a, b, *values, why=...)``: ``a`` applies only with ``b`` given (or, with ``values``, set to one of
  them).

An option counts as given when its value differs from its default (a flag set, a value where the default is
None, a list not empty). ``declare`` checks that each option it names is one of the parser's, so a renamed
option cannot leave a rule behind; ``tests/reliability/test_option_rules.py`` breaks every declared rule.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rule:
    """One declared relation between two options (``kind``: "excludes" or "needs"; module doc)."""

    kind: str
    option: str
    other: str
    why: str
    values: tuple[Any, ...] = ()
    dests: tuple[str, str] = ("", "")  # filled in by ``declare``
    defaults: tuple[Any, Any] = (None, None)

    def broken(self, args: argparse.Namespace) -> str | None:
        """The one-line message when ``args`` break the rule, else None."""
        value, other = (getattr(args, d, None) for d in self.dests)
        if not _given(value, self.defaults[0]):
            return None
        if self.kind == "excludes":
            if _given(other, self.defaults[1]):
                return f"{self.option} and {self.other} contradict each other: {self.why}; give one of them"
            return None
        if self.values:
            if other in self.values:
                return None
            wanted = " or ".join(f"{self.other} {v}" for v in self.values)
            return f"{self.option} applies only with {wanted} (got {self.other} {other}): {self.why}"
        if _given(other, self.defaults[1]):
            return None
        return f"{self.option} applies only with {self.other}: {self.why}"


def _given(value: Any, default: Any) -> bool:  # noqa: ANN401 - any option's value
    return value is not None and value is not False and value != [] and value != default


def excludes(option: str, other: str, why: str) -> Rule:
    return Rule("excludes", option, other, why)


def needs(option: str, other: str, *values: Any, why: str) -> Rule:  # noqa: ANN401
    return Rule("needs", option, other, why, values)


def declare(parser: argparse.ArgumentParser, *rules: Rule) -> None:
    """Record ``rules`` on ``parser`` (checked by ``check``); a name that is none of its options is refused."""
    actions = {opt: action for action in parser._actions for opt in action.option_strings}
    resolved = []
    for rule in rules:
        missing = [o for o in (rule.option, rule.other) if o not in actions]
        if missing:
            raise KeyError(f"{parser.prog}: a rule names {', '.join(missing)}, which it has no option for")
        first, second = actions[rule.option], actions[rule.other]
        resolved.append(
            Rule(
                rule.kind,
                rule.option,
                rule.other,
                rule.why,
                rule.values,
                (first.dest, second.dest),
                (first.default, second.default),
            )
        )
    parser.set_defaults(option_rules=(*(parser.get_default("option_rules") or ()), *resolved))


def check(args: argparse.Namespace) -> None:
    """ValueError (one line, exit 2 from ``main``) for the first declared rule that ``args`` break."""
    for rule in getattr(args, "option_rules", None) or ():
        message = rule.broken(args)
        if message is not None:
            raise ValueError(message)
