"""The documentation site: `mkdocs build --strict` (a broken link, a missing page or a bad anchor fails it),
the generated references against the code they come from, and no internal jargon on any page."""

from __future__ import annotations

import dataclasses
import html
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.browser import headless_chromium

from sentcl.cli import COMMANDS
from sentcl.config import TrainConfig
from sentcl.config.builtin import recipe_names, static_recipe_names
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


def test_cli_reference_has_a_page_per_command_and_the_pooler_page_every_pooler(site: Path) -> None:
    index = _text(site / "reference" / "cli" / "index.html")
    assert "usage: sentcl" in index
    for command, _ in COMMANDS:
        page = site / "reference" / "cli" / f"sentcl-{command}" / "index.html"
        text = _text(page)
        assert f"usage: sentcl {command}" in text, command
        for block in re.findall(r"<pre.*?</pre>", page.read_text(encoding="utf-8"), re.S):
            lines = html.unescape(re.sub(r"<[^>]+>", "", block)).splitlines()
            assert max(map(len, lines)) <= 100, (command, max(lines, key=len))  # wrapped help
    poolers = _text(site / "reference" / "poolers" / "index.html")
    assert set(re.findall(r"^\s*(\w+)\s*$", poolers, re.M)) >= set(POOLERS)
    assert "mask" in POOLERS


def test_docs_name_only_recipes_that_ship() -> None:
    """A page that says `--config NAME` or `sentcl recipes show NAME` names a built-in recipe."""
    names = set(recipe_names()) | set(static_recipe_names())
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


# --------------------------------------------------------------------------- the user's pages and the records

#: The team's own records, which no user page carries: issue numbers, commit hashes, load averages, acceptance
#: verdicts, dates of runs, accounts of who ran what, and the plot-size captions of generated pages.
RECORDS = re.compile(
    r"\bissues? ?#?\d+|#\d{2,}\b|\bload average|\btargets? (?:was |were )?met\b|\bmet: (?:yes|no)\b"
    r"|\b20\d\d-[01]\d-[0-3]\d\b|\bcommit [0-9a-f]{7,40}\b|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b"
    r"|\(Plot: \d+x\d+ px\.\)|\bwe ran\b|\bran (?:it|this|them) on\b|\bthe (?:development|shared) machine\b",
    re.IGNORECASE,
)
DEVELOPMENT = "Development"  # the nav section of the contributors' pages (records, architecture, results)


def _nav_pages(items: list, development: bool = False) -> list[tuple[str, bool]]:
    found = []
    for item in items:
        for key, value in item.items() if isinstance(item, dict) else [(None, item)]:
            inside = development or key == DEVELOPMENT
            found += _nav_pages(value, inside) if isinstance(value, list) else [(value, inside)]
    return found


def user_pages() -> list[Path]:
    """The Markdown files of docs/ that the nav lists outside "Development", and the README."""
    import yaml

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    pages = [ROOT / "docs" / page for page, dev in _nav_pages(nav) if not dev]
    return [page for page in pages if page.is_file()] + [ROOT / "README.md"]


def _prose(text: str) -> str:
    """A page without its code blocks and code spans (commands and keys, not statements)."""
    return re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))


def test_no_user_page_carries_the_teams_records() -> None:
    pages = user_pages()
    assert len(pages) >= 30 and ROOT / "docs" / "quickstart.md" in pages
    assert ROOT / "docs" / "performance.md" not in pages and ROOT / "docs" / "reliability.md" not in pages
    found = [
        f"{page.relative_to(ROOT)}: {m.group(0)!r}"
        for page in pages
        for m in RECORDS.finditer(page.read_text(encoding="utf-8"))
    ]
    assert not found, found


@pytest.mark.parametrize(
    "record",
    ["issue 15", "see #31", "load average 8 to 10", "target met", "met: no", "run of 2026-11-22",
     "at commit 5cd12be", "(Plot: 640x480 px.)", "we ran it twice", "on the shared machine"],
)  # fmt: skip
def test_records_pattern_finds_each_kind_of_record(record: str) -> None:
    assert RECORDS.search(record)


@pytest.mark.parametrize(
    "fine",
    ["training.seed 42", "bert-base-uncased", "recall@10 0.957", "sha256 of the file", "STS12-16", "a cafe"],
)
def test_records_pattern_leaves_ordinary_prose_alone(fine: str) -> None:
    assert not RECORDS.search(fine)


def _committed_numbers() -> set[str]:
    """Every number of the committed results, as a page would print it with two decimals (a fraction also as a
    percentage): the run summaries (their training logs included) and tables under docs/results, the bench results, and the grids' paper
    numbers (which the results pages print beside the measured ones)."""
    import json

    numbers: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, bool):
            return
        if isinstance(value, int | float):
            numbers.update({f"{value:.2f}", f"{value * 100:.2f}"})
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for path in [*(ROOT / "docs" / "results").rglob("*.json"), *(ROOT / "bench" / "results").rglob("*.json")]:
        walk(json.loads(path.read_text(encoding="utf-8")))
    for path in (ROOT / "docs" / "results").rglob("metrics.jsonl"):  # a run's training log, a record a line
        for line in path.read_text(encoding="utf-8").splitlines():
            walk(json.loads(line))
    grids = (ROOT / "src" / "sentcl" / "recipes" / "experiments").glob("*.yaml")
    for path in [*(ROOT / "docs" / "results").glob("*-cpu.md"), *grids]:
        numbers.update(re.findall(r"\d+\.\d\d\b", path.read_text(encoding="utf-8")))
    return numbers


def test_numbers_in_user_prose_come_from_committed_results() -> None:
    """A score or rate with two decimals on a user page is one of the committed results' numbers."""
    known = _committed_numbers()
    unknown = []
    for page in user_pages():
        for number in re.findall(r"(?<![\d.])\d+\.\d\d(?![\d.])", _prose(page.read_text(encoding="utf-8"))):
            if number not in known:
                unknown.append(f"{page.relative_to(ROOT)}: {number}")
    assert not unknown, unknown


def test_site_search_keeps_config_keys_whole_and_the_header_shows_the_version(site: Path) -> None:
    import json

    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    separator = re.compile(index["config"]["separator"])
    for key in (
        "training.max_steps",
        "training.num_threads",
        "data.train_file",
    ):  # a query splits as the text
        section, name = key.split(".")
        assert separator.split(f"set {key} 1") == ["set", section, name, "1"], (
            key
        )  # name keeps its underscore
    assert separator.split("a well-known word") == ["a", "well", "known", "word"]
    home = (site / "index.html").read_text(encoding="utf-8")
    from sentcl.version import __version__

    assert f"sentcl {__version__}" in home  # the version in the header


def _api_tables() -> dict[str, list[str]]:
    """The API page's parameter tables: heading name -> the parameter names of its first table."""
    page = (ROOT / "docs" / "reference" / "api.md").read_text(encoding="utf-8")
    tables = {}
    for section in re.split(r"^#{2,3} ", page, flags=re.M)[1:]:
        name = re.match(r"`([\w.]+)`", section)
        rows = re.findall(r"^\| `([^`]+)`(?:, `([^`]+)`)? \|", section, re.M)
        if name and rows:
            tables[name.group(1)] = [p for row in rows for p in row if p]
    return tables


def test_api_page_documents_every_parameter_of_each_public_name() -> None:
    """Against the code's own signatures (inspect), and nothing that is not a parameter."""
    import inspect

    import sentcl
    from sentcl.modeling.encoder import SentenceEncoder
    from sentcl.training.run import TrainResult

    tables = _api_tables()
    public = {
        "open_model": sentcl.open_model,
        "SentenceEncoder.from_pretrained": SentenceEncoder.from_pretrained,
        "SentenceEncoder.encode": SentenceEncoder.encode,
        "SentenceEncoder.similarity": SentenceEncoder.similarity,
        "SentenceEncoder.save_pretrained": SentenceEncoder.save_pretrained,
        "evaluate": sentcl.evaluate,
        "train": sentcl.train,
    }
    for name, function in public.items():
        params = [p for p in inspect.signature(function).parameters if p not in ("self", "cls")]
        assert tables[name][: len(params)] == params, name
    assert tables["load_config"] == ["cls", "path", "overrides"]
    assert list(inspect.signature(sentcl.load_config).parameters) == ["cls", "path", "overrides"]
    fields = [f.name for f in __import__("dataclasses").fields(TrainResult)]
    assert tables["train"][2:] == fields  # train's parameters, then its result's fields
    assert set(sentcl.__all__) >= {"SentenceEncoder", "open_model", "evaluate", "train", "load_config"}


# --------------------------------------------------------------------------- formulas, offline

#: a script, stylesheet, font or image the page itself loads (not a link the reader may follow)
LOADED = re.compile(r'<(?:script|img|iframe|source)\b[^>]*\bsrc="([^"]+)"|<link\b[^>]*\bhref="([^"]+)"', re.I)


def test_no_page_loads_anything_from_outside_the_site(site: Path) -> None:
    outside = []
    for page in site.rglob("*.html"):
        for match in LOADED.finditer(page.read_text(encoding="utf-8")):
            url = match.group(1) or match.group(2)
            if re.match(r"(?:[a-z]+:)?//", url, re.I) and 'rel="canonical"' not in match.group(0):
                outside.append(f"{page.relative_to(site)}: {url}")
    assert not outside, outside[:10]


def test_loaded_pattern_finds_a_cdn_script_and_leaves_links_alone() -> None:
    assert LOADED.search('<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js">')
    assert LOADED.search('<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">')
    assert not LOADED.search('<a href="https://aclanthology.org/2021.emnlp-main.552">the paper</a>')


def test_every_formula_is_mathml_in_the_built_page(site: Path) -> None:
    """As many ``<math>`` elements as the Markdown has ``$$`` blocks, and no TeX left for a script to typeset."""
    for md in (ROOT / "docs" / "methods").glob("*.md"):
        blocks = len(re.findall(r"^\s*\$\$\s*$", md.read_text(encoding="utf-8"), re.M)) // 2
        stem = md.parent if md.stem == "index" else md.with_suffix("")
        built = (site / stem.relative_to(ROOT / "docs") / "index.html").read_text(encoding="utf-8")
        assert built.count('<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">') == blocks, (
            md.name
        )
        assert 'class="arithmatex"' not in built and "\\frac" not in built, md.name


def test_a_formula_the_converter_cannot_read_fails_the_build_naming_the_page() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    from mkdocs.exceptions import PluginError
    from mkdocs_hooks import render_formulas

    good = render_formulas(
        '<div class="arithmatex">\\[a &lt; b\\]</div> and <span class="arithmatex">\\(x^2\\)</span>'
    )
    assert good.count("<math") == 2 and "<mo>&#x0003C;</mo>" in good and "<msup>" in good
    for bad in ("a^", "\\left( a", "\\notacommand{x}"):  # bad TeX, and a command it would print as text
        with pytest.raises(PluginError, match="methods/x.md"):
            render_formulas(f'<div class="arithmatex">\\[{bad}\\]</div>', "methods/x.md")


@pytest.fixture()
def served_site(site: Path) -> Iterator[str]:
    """The built site over HTTP on 127.0.0.1 (a file:// page would not show what a server's reader sees)."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_formulas_draw_in_a_real_browser_with_nothing_loaded_from_outside(served_site: str) -> None:
    """Headless Chromium (Debian's, as the service page's test drives it): each formula of a method page is a
    ``<math>`` box wider and taller than a line of text, and every resource the page fetched is the site's own."""
    from selenium.webdriver.common.by import By

    with headless_chromium(window="1200,900", load_timeout=30) as driver:
        for page in ("methods/unsup-simcse/", "methods/distill-kl/"):
            driver.get(f"{served_site}/{page}")
            formulas = driver.find_elements(By.CSS_SELECTOR, "article math[display=block]")
            assert formulas, page
            for formula in formulas:
                box = driver.execute_script("return arguments[0].getBoundingClientRect().toJSON()", formula)
                assert box["width"] > 40 and box["height"] > 20, (page, box)
            fetched = driver.execute_script(
                "return performance.getEntriesByType('resource').map(e => e.name)"
            )
            assert fetched and all(url.startswith(served_site) for url in fetched), (page, fetched)


# --------------------------------------------------------------------------- the demo page and its run

DEMO_RUN = ROOT / "docs" / "results" / "demo"  # the demo run's summary: config, metrics, results, no weights
DEMO_TASKS = {"STS12": "STS12", "STS13": "STS13", "STS14": "STS14", "STS15": "STS15", "STS16": "STS16",
              "STS-B": "STSBenchmark", "SICK-R": "SICKRelatedness", "Avg.": "avg"}  # fmt: skip


def _sts_score(results: dict, task: str) -> float:
    value = results["sts"][task]  # STS12-16: SentEval's "all"; STS-B and SICK-R: Spearman; the average
    return value if isinstance(value, float) else value["all"] if "all" in value else value["spearman"]


def test_demo_page_table_is_its_committed_run_summary() -> None:
    """The demo page's table and dev scores, against the committed summary of the run that printed them (its
    files checked against the SHA-256 of summary.json), read independently of the code that wrote the page."""
    import json

    from sentcl.experiments.summaries import verify_summary

    verify_summary(DEMO_RUN)
    assert (DEMO_RUN / "summary.json").is_file()
    config = json.loads((DEMO_RUN / "config.json").read_text(encoding="utf-8"))
    from sentcl.config import load_config
    from sentcl.config.builtin import resolve_recipe

    recipe = dataclasses.asdict(load_config(TrainConfig, resolve_recipe("demo")))
    defaults = dataclasses.asdict(TrainConfig())
    for section in ("model", "objective"):
        added = {k: v for k, v in recipe[section].items() if k not in config[section]}
        # keys added since the run are at their defaults (what the run did before they existed)
        assert added == {k: defaults[section][k] for k in added}, section
        kept = {k: v for k, v in recipe[section].items() if k in config[section]}
        assert config[section] == kept, section  # the run is the recipe's, seed included
    assert {k: config["training"][k] for k in ("max_steps", "batch_size", "learning_rate", "seed")} == {
        k: recipe["training"][k] for k in ("max_steps", "batch_size", "learning_rate", "seed")
    }
    start = json.loads((DEMO_RUN / "start_results.json").read_text(encoding="utf-8"))
    trained = json.loads((DEMO_RUN / "results.json").read_text(encoding="utf-8"))["results"]
    page = (ROOT / "docs" / "results" / "demo.md").read_text(encoding="utf-8")
    rows = dict(
        (cells[0], cells[1:])
        for cells in (
            [c.strip().strip("*") for c in line.strip("|").split("|")] for line in page.splitlines()
        )
        if cells[0] in DEMO_TASKS
    )
    assert set(rows) == set(DEMO_TASKS)
    for label, task in DEMO_TASKS.items():
        assert rows[label] == [f"{_sts_score(start, task):.2f}", f"{_sts_score(trained, task):.2f}"], label
    evals = [
        json.loads(line) for line in (DEMO_RUN / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    dev = {e["step"]: e["stsb_dev"] for e in evals if e.get("event") == "eval"}
    expected = ", ".join(f"{score:.2f} at step {step}" for step, score in sorted(dev.items()))
    assert f"STS-B dev during training: {expected}." in page
