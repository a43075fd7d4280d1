"""``sentcl recipes``: list the built-in recipes, or print one (``sentcl recipes show NAME``)."""

from __future__ import annotations

import argparse
import re
import textwrap

from sentcl.config.builtin import (
    GRIDS_SUBDIR,
    RECIPES_DIR,
    STATIC_SUBDIR,
    builtin_path,
    grid_names,
    recipe_names,
    static_recipe_names,
    static_recipe_path,
)
from sentcl.files.kinds import name_value

LINE_WIDTH = 110


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "recipes",
        help="List the built-in recipes (sentcl recipes show NAME prints one).",
        description="The recipes that ship with sentcl. Any of them is a --config NAME of sentcl train "
        "(an experiment grid: sentcl experiment NAME; a static student: sentcl distill-static --config NAME); "
        "copy one with sentcl recipes show NAME > mine.yaml.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    show = actions.add_parser("show", help="Print one recipe's YAML.")
    show.add_argument("name", type=name_value, help="Recipe name, e.g. demo or experiments/dropout.")
    p.set_defaults(func=handle)


def _summary(name: str) -> str:
    """The first sentence of a recipe file's leading comment: what it is (whole, never cut)."""
    block = []
    for line in (RECIPES_DIR / f"{name}.yaml").read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        block.append(line.lstrip("#").strip())
    text = " ".join(part for part in block if part)
    end = re.search(r"[.;](?=\s+[A-Z(]|\s*$)", text)
    return text[: end.start()] if end else text


def _table(names: list[str], folder: str = "") -> str:
    """One entry per recipe: its name (without ``folder/``) and what it is, wrapped at ``LINE_WIDTH``
    characters under the name."""
    shown = {name: name.removeprefix(f"{folder}/") if folder else name for name in names}
    width = max(len(name) for name in shown.values())
    indent = " " * (width + 4)
    return "\n".join(
        f"  {shown[name]:<{width}}  "
        + textwrap.fill(_summary(name), LINE_WIDTH, initial_indent=indent, subsequent_indent=indent).lstrip()
        if _summary(name)
        else f"  {shown[name]}"
        for name in names
    )


def handle(args: argparse.Namespace) -> int:
    if args.action == "show":
        path = (
            builtin_path(args.name)
            or builtin_path(f"{GRIDS_SUBDIR}/{args.name}")
            or static_recipe_path(args.name)
        )
        if path is None:  # a name only: a file of the working folder is not a built-in recipe
            names = ", ".join(recipe_names() + grid_names() + static_recipe_names())
            raise FileNotFoundError(f"no built-in recipe named {args.name!r}; built-in recipes: {names}")
        print(path.read_text(encoding="utf-8"), end="")
        return 0
    print(f"training recipes (sentcl train --config NAME), in {RECIPES_DIR}:")
    print(_table(recipe_names()))
    print("\nexperiment grids (sentcl experiment NAME):")
    print(_table(grid_names()))
    print("\nstatic students (sentcl distill-static --config NAME):")
    print(_table([f"{STATIC_SUBDIR}/{name}" for name in static_recipe_names()], STATIC_SUBDIR))
    return 0
