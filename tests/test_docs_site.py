"""The documentation site: `mkdocs build --strict` (a broken link, a missing page or a bad anchor fails it),
the generated references against the code they come from, and no internal jargon on any page."""

from __future__ import annotations

import dataclasses
import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sentcl.cli import COMMANDS
from sentcl.config import TrainConfig
from sentcl.config.builtin import recipe_names
from sentcl.config.poolers import POOLERS

ROOT = Path(__file__).resolve().parents[1]
# Internal language a reader does not have: the numbering of the source papers ("seed 003"; a random seed is
# fine), the tracker's items, and the notes written when work stopped.
JARGON = re.compile(r"seeds?[ _-]?0\d\d\b|\bissues?\b|\bclosing[ -]notes?\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)]
    result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    return out


def _text(page: Path) -> str:
    """A built page's visible text of its article (navigation left out), tags removed."""
    body = page.read_text(encoding="utf-8")
    article = re.search(r"<article.*?</article>", body, re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", article.group(0) if article else body))


def test_site_builds_strictly_with_every_page(site: Path) -> None:
    for page in ("quickstart", "install", "reference/configuration", "reference/cli", "reference/api"):
        assert (site / page / "index.html").is_file(), page
    for md in (ROOT / "docs").rglob("*.md"):  # every Markdown file of docs/ became a page
        rel = md.relative_to(ROOT / "docs")
        if "cache" in rel.parts:
            continue
        stem = rel.parent if rel.name in ("README.md", "index.md") else rel.with_suffix("")
        assert (site / stem / "index.html").is_file(), rel


def test_no_page_speaks_internal_jargon(site: Path) -> None:
    found = []
    for page in site.rglob("*.html"):
        for match in JARGON.finditer(_text(page)):
            found.append(f"{page.relative_to(site)}: {match.group(0)!r}")
    assert not found, found


def test_jargon_pattern_tells_a_paper_number_from_a_random_seed() -> None:
    assert JARGON.search("as seed 003 writes it") and JARGON.search("see the closing notes")
    assert JARGON.search("issue 11") and JARGON.search("quick_thoughts_seed002")
    assert not JARGON.search("training.seed: the random seed, seeds: [42, 1, 2]")


def _table_rows(page: Path) -> dict[str, list[str]]:
    """First column -> the row's cells, for every table row of a built page (first occurrence wins)."""
    rows: dict[str, list[str]] = {}
    for row in re.findall(r"<tr>(.*?)</tr>", page.read_text(encoding="utf-8"), re.S):
        cells = [
            html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td>(.*?)</td>", row, re.S)
        ]
        if cells:
            rows.setdefault(cells[0], cells)
    return rows


def test_configuration_reference_lists_every_field_with_its_default(site: Path) -> None:
    rows = _table_rows(site / "reference" / "configuration" / "index.html")
    defaults = TrainConfig()
    for section in dataclasses.fields(TrainConfig):
        instance = getattr(defaults, section.name)
        for f in dataclasses.fields(instance):
            value = getattr(instance, f.name)
            if dataclasses.is_dataclass(value):
                continue
            key = f"{section.name}.{f.name}"
            assert key in rows, key
            assert rows[key][2] == repr(value), (key, rows[key])
            assert rows[key][3] == f.metadata.get("help", ""), (key, rows[key])


def test_cli_reference_has_every_command_and_the_pooler_page_every_pooler(site: Path) -> None:
    text = _text(site / "reference" / "cli" / "index.html")
    for command, _ in COMMANDS:
        assert f"usage: sentcl {command}" in text, command
    poolers = _text(site / "reference" / "poolers" / "index.html")
    assert set(re.findall(r"^\s*(\w+)\s*$", poolers, re.M)) >= set(POOLERS)
    assert "mask" in POOLERS


def test_docs_name_only_recipes_that_ship() -> None:
    """A page that says `--config NAME` or `sentcl recipes show NAME` names a built-in recipe."""
    names = set(recipe_names())
    pages = [*(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]
    for page in pages:
        for name in re.findall(
            r"(?:--config|recipes show) ([a-z_0-9]+)\b(?!\.|/)", page.read_text(encoding="utf-8")
        ):
            assert name in names, f"{page.relative_to(ROOT)}: {name}"


def test_readme_is_short_and_its_links_reach_files() -> None:
    readme = ROOT / "README.md"
    assert readme.stat().st_size < 10_000
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme.read_text(encoding="utf-8"))
    assert len(links) >= 20  # the site's pages, as files that also work on GitHub
    for link in links:
        assert not link.startswith("http"), link
        assert (ROOT / link).is_file(), link
