"""mkdocs hook (mkdocs.yml ``hooks:``): generates the configuration and CLI reference pages at build time.

``reference/poolers.md`` is the torch-free pooler table (``sentcl.config.poolers``). ``reference/configuration.md`` walks the config dataclasses (``sentcl.config.TrainConfig``, each section and,
for ``objective:``, the base options and then every registered method's own options): key, type, default and
the field's help line. ``reference/cli/COMMAND.md`` is the ``--help`` of one command and its sub-commands (nested ones
included), ``reference/cli/index.md`` that of ``sentcl``, taken from the argparse parser of ``sentcl.cli``. Both are written into the build only, never
into docs/, so they cannot go stale.

Formulas (arithmatex's ``$$...$$`` and ``\\(...\\)``, generic mode) become MathML at build time (``latex2mathml``),
which browsers draw themselves: a page needs no script, from the site or elsewhere, to show them. A formula
that cannot be converted (bad TeX, or a command latex2mathml does not know) fails the build, naming the page.
"""

from __future__ import annotations

import argparse
import dataclasses
import html
import os
import re
import sys
import textwrap
import types
import typing
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # document the checkout being built

CONFIG_PAGE = "reference/configuration.md"
CLI_DIR = "reference/cli"
CHANGELOG_PAGE = "changelog.md"
ROOT = Path(__file__).resolve().parents[1]
POOLERS_PAGE = "reference/poolers.md"
HELP_WIDTH = "100"  # argparse wraps at $COLUMNS: a fixed width gives the same page on every machine


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, types.GenericAlias | types.UnionType) or typing.get_origin(annotation):
        return str(annotation).replace("typing.", "")
    return getattr(annotation, "__name__", str(annotation))


def _cell(text: str) -> str:
    """Help text as a table cell: pipes escaped, ``<`` ``>`` ``&`` as entities outside code spans (so that
    ``<TAB>`` is shown, not taken for a tag)."""
    parts = re.split(r"(`[^`]*`)", text.replace("\n", " "))
    return "".join(p if p.startswith("`") else html.escape(p, quote=False) for p in parts).replace("|", "\\|")


def _code(text: str) -> str:
    """A table cell in code type; a pipe inside Markdown's backticks would show its escape, so HTML."""
    return "<code>" + html.escape(text).replace("|", "&#124;").replace("\n", " ") + "</code>"


def _rows(cls: type[Any], prefix: str, skip: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
    """One table row per leaf field of dataclass ``cls`` (nested dataclass sections are walked)."""
    hints = typing.get_type_hints(cls)
    defaults = cls()
    rows: list[str] = []
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        annotation = hints[f.name]
        if dataclasses.is_dataclass(annotation):
            continue  # a section: listed under its own heading
        default = repr(getattr(defaults, f.name))
        help_ = f.metadata.get("help", "")
        rows.append(
            f"| `{prefix}{f.name}` | {_code(_type_name(annotation))} | {_code(default)} | {_cell(help_)} |"
        )
    return rows


def _table(rows: list[str]) -> str:
    return "\n".join(["| key | type | default | what |", "|---|---|---|---|", *rows])


def config_reference() -> str:
    from sentcl.config import TrainConfig
    from sentcl.config.method_catalogue import option_classes as objective_option_classes
    from sentcl.config.objective import ObjectiveConfig

    hints = typing.get_type_hints(TrainConfig)
    parts = [
        "# Configuration reference",
        "",
        "Generated from the config dataclasses when the site is built. A recipe is a YAML file with these "
        "sections; on the command line any key is `--set section.key=value` (`sentcl train --help` prints "
        "the same list).",
    ]
    for f in dataclasses.fields(TrainConfig):
        section = hints[f.name]
        if not dataclasses.is_dataclass(section):
            continue
        parts += ["", f"## `{f.name}:`", ""]
        if f.name == "objective":
            parts += [
                "Options every method accepts (`objective.name` picks the method):",
                "",
                _table(_rows(ObjectiveConfig, "objective.")),
            ]
            base = {g.name for g in dataclasses.fields(ObjectiveConfig)}
            for method, options in objective_option_classes().items():
                rows = _rows(options, "objective.", skip=base)
                parts += ["", f"### `{method}`", ""]
                parts += [_table(rows) if rows else "No options of its own."]
        else:
            doc = (section.__doc__ or "").strip()
            if doc and not doc.startswith(section.__name__ + "("):  # dataclasses invent a signature doc
                parts += [doc, ""]
            parts += [_table(_rows(section, f"{f.name}."))]
    return "\n".join(parts) + "\n"


def _parsers(parser: argparse.ArgumentParser, name: str) -> list[tuple[str, argparse.ArgumentParser]]:
    """``parser`` and every sub-parser below it, depth first, with their command lines."""
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                found += _parsers(sub, f"{name} {sub_name}")
    return found


def _help_texts() -> list[tuple[str, str]]:
    """(command line, --help text) of ``sentcl`` and every sub-command, at a fixed width; a line argparse
    cannot wrap (a long usage word) is wrapped here, so no line of the pages runs past ``HELP_WIDTH``."""
    from sentcl.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    try:
        pages = [(name, sub.format_help()) for name, sub in _parsers(build_parser(), "sentcl")]
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    width = int(HELP_WIDTH)
    wrapped = []
    for name, text in pages:
        lines = []
        for line in text.rstrip().splitlines():
            indent = " " * (len(line) - len(line.lstrip()) + 2)
            lines += textwrap.wrap(line, width, subsequent_indent=indent, break_on_hyphens=False) or [""]
        wrapped.append((name, "\n".join(lines)))
    return wrapped


def cli_pages() -> dict[str, str]:
    """``reference/cli/index.md`` (``sentcl --help`` and a link per command) and one page per command
    (``reference/cli/COMMAND.md``: its --help and those of its sub-commands)."""
    from sentcl.cli import COMMANDS

    texts = _help_texts()
    pages = {}
    for command, _ in COMMANDS:
        own = [(n, t) for n, t in texts if n == f"sentcl {command}" or n.startswith(f"sentcl {command} ")]
        parts = [
            f"# `sentcl {command}`",
            "",
            "Generated from the command's argparse parser when the site is built.",
        ]
        for name, text in own:
            parts += ["", f"## `{name}`", "", "```text", text, "```"]
        pages[f"{CLI_DIR}/sentcl-{command}.md"] = "\n".join(parts) + "\n"
    links = [f"- [`sentcl {c}`](sentcl-{c}.md)" for c, _ in COMMANDS]
    top = dict(texts)["sentcl"]
    index = [
        "# CLI reference",
        "",
        "One page per command, generated from the `sentcl` command's argparse parser.",
        "",
    ]
    index += [*links, "", "## `sentcl`", "", "```text", top, "```"]
    pages[f"{CLI_DIR}/index.md"] = "\n".join(index) + "\n"
    return pages


def poolers_reference() -> str:
    from sentcl.config.poolers import POOLER_TABLE

    yes = {True: "yes", False: "no"}
    rows = [
        f"| `{p.name}` | {p.description} | {yes[p.head]} | "
        f"{f'`{p.st_pooling}`' if p.st_pooling else 'no'} | {yes[p.all_layers]} |"
        for p in POOLER_TABLE.values()
    ]
    return (
        "\n".join(
            [
                "# Poolers",
                "",
                "Generated from `sentcl.config.poolers.POOLER_TABLE` when the site is built. `model.pooler` (and `--pooler`) "
                "takes one of these names.",
                "",
                "| pooler | sentence vector | MLP head | sentence-transformers pooling | needs all layers |",
                "|---|---|---|---|---|",
                *rows,
                "",
                "`cls` trains SimCSE's MLP head (Linear + Tanh) over [CLS]; `model.mlp_only_train: true` drops it at "
                "inference. `mask` is PromptBERT's: the sentence is placed in a template (`model.prompt_templates`) "
                "and the vector is the state at its [MASK] ([PromptBERT](../methods/promptbert.md)). Poolers without "
                "a sentence-transformers pooling are saved for sentcl only ([model folders](../guides/model-folders.md)).",
            ]
        )
        + "\n"
    )


def on_config(config: Any) -> Any:
    """The version beside the site's name, and the CLI's section of the nav: its index, then a page per
    command (generated, so not listed in mkdocs.yml)."""
    from sentcl.cli import COMMANDS
    from sentcl.version import __version__

    config["site_name"] = f"sentcl {__version__}"
    pages = [
        {"Overview": f"{CLI_DIR}/index.md"},
        *({f"sentcl {c}": f"{CLI_DIR}/sentcl-{c}.md"} for c, _ in COMMANDS),
    ]

    def walk(items: list[Any]) -> None:
        for i, item in enumerate(items):
            if isinstance(item, dict):
                for key, value in item.items():
                    if value == f"{CLI_DIR}/index.md":
                        items[i] = {key: pages}
                    elif isinstance(value, list):
                        walk(value)

    walk(config["nav"])
    return config


def on_files(files: Files, config: Any) -> Files:
    pages = {CONFIG_PAGE: config_reference(), POOLERS_PAGE: poolers_reference(), **cli_pages()}
    pages[CHANGELOG_PAGE] = (ROOT / "CHANGELOG.md").read_text(
        encoding="utf-8"
    )  # one file, in the repo and the site
    for uri, content in pages.items():
        files.append(File.generated(config, uri, content=content))
    return files


#: arithmatex's generic output: a display formula as ``<div class="arithmatex">\\[...\\]</div>``, an inline one
#: as ``<span class="arithmatex">\\(...\\)</span>`` (its TeX HTML-escaped)
ARITHMATEX = re.compile(
    r'<(?P<tag>div|span) class="arithmatex">\s*\\(?P<open>[\[(])(?P<tex>.*?)\\[\])]\s*</(?P=tag)>', re.S
)


def tex_to_mathml(tex: str, display: bool) -> str:
    """One TeX formula as a ``<math>`` element (``display="block"`` for a display formula)."""
    from latex2mathml.converter import convert

    mathml = convert(tex.strip(), display="block" if display else "inline")
    unknown = re.findall(r">(\\[A-Za-z]+)<", mathml)  # latex2mathml shows a command it does not know as text
    if unknown:
        raise ValueError(f"unknown TeX command {unknown[0]}")
    return mathml


def render_formulas(content: str, page: str = "") -> str:
    """Every arithmatex formula of a built page's HTML replaced by its MathML; a formula that latex2mathml
    cannot read is a build error naming the page and the formula."""

    def one(match: re.Match[str]) -> str:
        tex = html.unescape(match.group("tex"))
        try:
            return tex_to_mathml(tex, display=match.group("open") == "[")
        except Exception as err:  # latex2mathml raises its own several kinds
            raise PluginError(f"{page}: cannot render the formula {tex.strip()!r}: {err}") from err

    return ARITHMATEX.sub(one, content)


def on_page_content(html_: str, page: Any, config: Any, files: Files) -> str:
    return render_formulas(html_, page.file.src_uri)
