"""Options that contradict each other are refused in one line, before any work (``sentcl.cli.option_rules``).

Every rule declared on any command's parser is broken here, generated from the declarations themselves (a new
rule is tested without a new line here): the message names both options, and the same options given without
the contradiction pass. The rows the outside sweep found run through the real CLI: the check comes before a
model is opened, a port bound or a file read."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from sentcl.cli import build_parser, main
from sentcl.cli.option_rules import Rule, check


def parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """(command, parser) of every command and sub-command."""
    out, todo = [], [("sentcl", build_parser())]
    while todo:
        name, parser = todo.pop()
        out.append((name, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [(f"{name} {n}", p) for n, p in action.choices.items()]
    return out


RULES = [(name, p, r) for name, p in parsers() for r in p.get_default("option_rules") or ()]


def defaults(parser: argparse.ArgumentParser) -> argparse.Namespace:
    args = argparse.Namespace(**{a.dest: a.default for a in parser._actions if a.dest != "help"})
    args.option_rules = parser.get_default("option_rules")
    return args


def action_of(parser: argparse.ArgumentParser, option: str) -> argparse.Action:
    return next(a for a in parser._actions if option in a.option_strings)


def given_value(action: argparse.Action, avoid: tuple[object, ...] = ()) -> object:
    """A value other than the option's default (and than ``avoid``), as the command line would set it."""
    if action.const is True and action.nargs == 0:
        return True
    if action.choices:
        return next(c for c in action.choices if c != action.default and c not in avoid)
    return ["given"] if isinstance(action.default, list) else "given"


def test_rules_are_declared_for_the_rows_of_the_sweep() -> None:
    named = {(name, r.option, r.other) for name, _, r in RULES}
    assert ("sentcl serve", "--release-budget-mb", "--keep-malloc-threshold") in named
    assert ("sentcl index build", "--output", "--store") in named
    assert ("sentcl mine", "--corpus", "--index") in named
    assert len(RULES) >= 20


@pytest.mark.parametrize(
    ("command", "parser", "rule"), RULES, ids=[f"{n}:{r.option}:{r.other}" for n, _, r in RULES]
)
def test_every_declared_rule_refuses_its_contradiction(
    command: str, parser: argparse.ArgumentParser, rule: Rule
) -> None:
    first, other = action_of(parser, rule.option), action_of(parser, rule.other)
    args = defaults(parser)
    setattr(args, first.dest, given_value(first))
    if rule.kind == "excludes":
        setattr(args, other.dest, given_value(other))
    elif rule.values:
        setattr(args, other.dest, given_value(other, avoid=rule.values))
    with pytest.raises(ValueError) as err:
        check(args)
    line = str(err.value)
    assert rule.option in line and rule.other in line and "\n" not in line
    # the same option, without the contradiction: this rule holds
    setattr(args, other.dest, other.default if rule.kind == "excludes" else (rule.values or ("given",))[0])
    if rule.kind == "needs" and not rule.values:
        setattr(args, other.dest, given_value(other))
    assert rule.broken(args) is None


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["serve", "no-such-model", "--port", "0", "--release-budget-mb", "1", "--keep-malloc-threshold"],
            "--release-budget-mb and --keep-malloc-threshold contradict each other",
        ),
        (
            ["search", "--model", "no-such-model", "--query", "q", "--nprobe", "4"],
            "--nprobe applies only with --index",
        ),
        (
            ["index", "build", "--embeddings", "{tmp}", "--store", "{tmp}/s", "--queries", "{tmp}/q.npy"],
            "--queries and --store contradict each other",
        ),
        (
            ["index", "build", "--embeddings", "{tmp}", "--type", "ivf", "--pq-m", "4"],
            "--pq-m applies only with --type ivfpq (got --type ivf)",
        ),
        (
            ["eval", "--model", "no-such-model", "--plot", "{tmp}/p.png"],
            "--plot applies only with --truncate-dims",
        ),
    ],
)
def test_the_cli_refuses_before_any_work(
    argv: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"sentcl {argv[0]}") and said in err and "\n" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written
