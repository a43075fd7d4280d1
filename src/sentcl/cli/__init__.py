"""Command line: ``sentcl COMMAND``. One module per command in this package; shared options in ``options``.

A command module defines ``add_parser(sub)``, which registers its sub-parser and sets ``func`` to the function
that runs it (``run(args) -> int``). A new command is a new module named in ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from sentcl.cli.options import USER_ERRORS, user_error_message

# (command, module in this package), in the order ``sentcl --help`` lists them
COMMANDS: tuple[tuple[str, str], ...] = (
    ("train", "train"),
    ("eval", "eval"),
    ("encode", "encode"),
    ("search", "search"),
    ("index", "index"),
    ("mine", "mine"),
    ("build-nli", "build_nli"),
    ("download", "download"),
    ("report", "report"),
    ("experiment", "experiment"),
    ("export", "export"),
    ("postprocess", "postprocess"),
    ("serve", "serve"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sentcl", description="Sentence embeddings by contrastive learning."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="Log debug messages.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for _, module in COMMANDS:
        importlib.import_module(f"sentcl.cli.{module}").add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import transformers

    transformers.utils.logging.disable_progress_bar()  # per-file load/save bars drown the training bar
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        return int(args.func(args))
    except USER_ERRORS as err:
        print(f"sentcl {args.command}: error: {user_error_message(err)}", file=sys.stderr)
        return 2
