"""The developer pages are maps, not records: docs/performance.md, reliability.md and architecture.md stay at
most 15,000 bytes each, and the records they point to live in bench/results/records/, every one of them (and
every result file) named by the records index, bench/results/README.md."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
INDEX = RESULTS / "README.md"
MAX_PAGE_BYTES = 15_000


@pytest.mark.parametrize("page", ["performance.md", "reliability.md", "architecture.md"])
def test_developer_pages_are_maps_of_at_most_15_kb(page: str) -> None:
    size = (ROOT / "docs" / page).stat().st_size
    assert size <= MAX_PAGE_BYTES, f"docs/{page} is {size} bytes: move records to bench/results/records/"


def test_every_record_is_in_the_index_and_every_indexed_record_exists() -> None:
    text = INDEX.read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\((records/[^)#\s]+\.md)\)", text))
    on_disk = {f"records/{p.name}" for p in (RESULTS / "records").glob("*.md")}
    assert linked == on_disk


def test_every_result_file_is_named_by_a_pattern_of_the_index() -> None:
    """Each JSON under bench/results (and each folder of them) matches a file pattern of the index's tables."""
    patterns = set(re.findall(r"`([\w*./-]+?(?:\.json|/))`", INDEX.read_text(encoding="utf-8")))
    names = [p.name for p in RESULTS.glob("*.json")] + [p.name + "/" for p in RESULTS.iterdir() if p.is_dir()]
    unnamed = [n for n in names if n != "records/" and not any(fnmatch.fnmatch(n, pat) for pat in patterns)]
    assert unnamed == [], "add these to bench/results/README.md"


def test_the_pages_point_at_their_records() -> None:
    for page, record in [("performance.md", "performance.md"), ("reliability.md", "reliability.md")]:
        assert f"bench/results/records/{record}" in (ROOT / "docs" / page).read_text(encoding="utf-8")
