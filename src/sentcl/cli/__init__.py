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
from sentcl.install import missing_extra_message

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
    ("recipes", "recipes"),
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
    except ImportError as err:  # an optional extra that is not installed: the command that installs it
        message = _missing_extra(err)
        if message is None:
            raise
        print(f"sentcl {args.command}: error: {message}", file=sys.stderr)
        return 2


def _missing_extra(err: ImportError) -> str | None:
    """The install advice for a missing extra's module, or None for any other import failure."""
    if isinstance(err.__cause__, ImportError) and "not installed" in str(err):
        return str(err)  # already worded by the code that imported it (faiss, mteb)
    return missing_extra_message(err.name) if err.name else None
