"""Command line: ``sentcl COMMAND``. One module per command in this package; shared options in ``options``.

A command module defines ``add_parser(sub)``, which registers its sub-parser and sets ``func`` to the function
that handles it (``handle(args) -> int``); ``evaluates=True`` there when the command runs evaluation tasks
(the "mteb" task is then registered). A new command is a new module named in ``COMMANDS``. Building the
parser imports no model, engine or evaluation code (``sentcl --version`` and ``--help`` answer at once): a
command module imports what runs it inside its handler, and the choices its options offer come from the
light ``sentcl.config.names``.

``main`` turns what goes wrong into one line ``sentcl CMD: error: ...`` and an exit status, never a
traceback: a user's mistake (``options.USER_ERRORS``) exits 2; an OS error (a write the OS refused: a
read-only folder, a full disk, a file-size limit) exits 1, naming the user's path and the OS's reason
(``sentcl.files.pathcheck.os_error_message``). Standard output closed early (``sentcl ... | head -1``) ends
quietly with 141, as a process killed by SIGPIPE; standard output full or failing (``> /dev/full``) is one
error line and exit 1. In both cases standard output is then pointed at /dev/null, so the interpreter's own
flush at exit prints nothing more. Ctrl-C (SIGINT) anywhere, parsing included, ends with one line
``sentcl CMD: interrupted`` and exit 130 (128 + SIGINT, what a shell reports), never a traceback: every
writer of sentcl writes to a temporary and renames it into place, so an interrupted command leaves nothing
half-written (the temporaries are removed as the interrupt unwinds). A Rust panic of a tokenizer (a
pattern that gave up: Oniguruma's retry limit) is one line naming the tokenizer, exit 2.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from sentcl.cli import interrupt
from sentcl.cli.option_rules import check as check_option_rules
from sentcl.cli.options import USER_ERRORS, user_error_message
from sentcl.extras import missing_extra_message
from sentcl.files.pathcheck import os_error_message
from sentcl.files.shown import ShownFormatter, shown
from sentcl.version import __version__

SIGPIPE_EXIT = 141  # 128 + SIGPIPE: what a shell reports for a writer whose reader went away
SIGINT_EXIT = 130  # 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C
logger = logging.getLogger("sentcl")

# (command, module in this package), in the order ``sentcl --help`` lists them
COMMANDS: tuple[tuple[str, str], ...] = (
    ("train", "train"),
    ("eval", "eval"),
    ("encode", "encode"),
    ("search", "search"),
    ("index", "index"),
    ("mine", "mine"),
    ("build-nli", "build_nli"),
    ("build-corpus", "build_corpus"),
    ("download", "download"),
    ("report", "report"),
    ("experiment", "experiment"),
    ("recipes", "recipes"),
    ("export", "export"),
    ("distill-static", "distill_static"),
    ("shrink", "shrink"),
    ("postprocess", "postprocess"),
    ("serve", "serve"),
    ("verify", "verify"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sentcl", description="Sentence embeddings by contrastive learning."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="Log debug messages.")
    parser.add_argument("-V", "--version", action="version", version=f"sentcl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for _, module in COMMANDS:
        importlib.import_module(f"sentcl.cli.{module}").add_parser(sub)
    return parser


class StdoutError(OSError):
    """Writing to standard output failed (closed pipe, full device, I/O error)."""


class _GuardedStdout:
    """Standard output whose write/flush failures are ``StdoutError``: told apart from a file's OSError."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:  # what a command prints for a person: control characters shown, never obeyed (files.shown)
            self._stream.write(shown(text, lines=True))
            return len(text)
        except OSError as err:
            raise StdoutError(err.errno, err.strerror) from err

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as err:
            raise StdoutError(err.errno, err.strerror) from err

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _silence_stdout(stream: Any) -> None:
    """Point standard output's file descriptor at /dev/null: the exit-time flush then cannot fail."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return  # not a real file (a test's capture): nothing is flushed at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _error(command: str, message: str, code: int) -> int:
    print(f"sentcl {command}: error: {shown(message, lines=True)}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    stdout = sys.stdout
    sys.stdout = _GuardedStdout(stdout)
    command = "sentcl"
    restore = interrupt.install()  # Ctrl-C stops the command even when it lands in a finaliser
    try:
        args = build_parser().parse_args(argv)  # --help's text goes to stdout too: guarded as well
        command = args.command
        return _run(args)
    except KeyboardInterrupt:
        interrupt.disarm()
        print(f"sentcl {command}: interrupted", file=sys.stderr)
        return SIGINT_EXIT
    except StdoutError as err:
        _silence_stdout(stdout)
        if err.errno == errno.EPIPE:
            return SIGPIPE_EXIT
        return _error(command, f"cannot write to standard output: {err.strerror}", 1)
    finally:
        sys.stdout = stdout
        restore()


def _run(args: argparse.Namespace) -> int:
    """Run the command; user errors exit 2, the OS's refusals 1 (one line each, see the module doc)."""
    # per-file load/save bars drown the training bar; transformers reads this when (if) it is imported
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "transformers" in sys.modules:
        sys.modules["transformers"].utils.logging.disable_progress_bar()
    handler = logging.StreamHandler()  # log lines show a path's or a text's control characters escaped
    handler.setFormatter(ShownFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, handlers=[handler])
    # faiss' loader says at INFO which CPU build it tried ("Could not load library with AVX2 support"):
    # a detail of its install, not of the command; shown with --verbose
    logging.getLogger("faiss").setLevel(logging.DEBUG if args.verbose else logging.WARNING)
    try:
        check_option_rules(args)  # options that contradict each other: one line, before any work
        if getattr(args, "evaluates", False):  # a command that evaluates (set_defaults(evaluates=True))
            from sentcl.interop import mteb_adapter  # noqa: F401  registers the evaluation task "mteb"
        code = int(args.func(args))
        sys.stdout.flush()
        return code
    except (StdoutError, KeyboardInterrupt):
        raise
    except USER_ERRORS as err:
        os_reported = isinstance(err, OSError) and err.filename is not None and err.strerror
        return _error(args.command, os_error_message(err) if os_reported else user_error_message(err), 2)
    except ImportError as err:  # an optional extra that is not installed: the command that installs it
        message = _missing_extra(err)
        if message is None:
            raise
        return _error(args.command, message, 2)
    except OSError as err:
        logger.debug("the OS refused an operation", exc_info=True)
        return _error(args.command, os_error_message(err), 1)
    except BaseException as err:
        if _is_rust_panic(err):
            return _error(args.command, rust_panic_message(err), 2)
        if not isinstance(err, Exception):
            raise
        cause = err.__cause__  # a library's wrapper of the OS's refusal (e.g. a folder write's error type)
        if not (isinstance(cause, OSError) and cause.errno is not None):
            raise
        logger.debug("the OS refused an operation", exc_info=True)
        return _error(args.command, os_error_message(cause), 1)


def _is_rust_panic(err: BaseException) -> bool:
    """pyo3's PanicException (a BaseException, not importable by name): a Rust library gave up."""
    return type(err).__name__ == "PanicException"


def rust_panic_message(err: BaseException) -> str:
    """One line for a tokenizer's Rust panic: the reason, first line (the Rust backtrace is not printed)."""
    reason = str(err).strip().splitlines()[0] if str(err).strip() else "no reason given"
    return (
        f"the model's tokenizer failed on this input (a Rust panic: {reason}); its tokenizer.json holds a "
        "pattern the tokenizer library cannot run on it"
    )


def _missing_extra(err: ImportError) -> str | None:
    """The install advice for a missing extra's module, or None for any other import failure."""
    if isinstance(err.__cause__, ImportError) and "not installed" in str(err):
        return str(err)  # already worded by the code that imported it (faiss, mteb)
    return missing_extra_message(err.name) if err.name else None
