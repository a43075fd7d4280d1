"""The Benchmarks page is written from committed results only: the committed page equals what
scripts/bench_page.py writes from bench/results and the run summaries, and its numbers are those files' own."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script():  # noqa: ANN202 - a module object
    spec = importlib.util.spec_from_file_location("bench_page", ROOT / "scripts" / "bench_page.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_page"] = module
    spec.loader.exec_module(module)
    return module


def test_committed_page_is_what_the_script_writes_from_committed_results() -> None:
    script = _script()
    assert (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8") == script.page(script.gather())
    for plot in ("train.png", "encode_quality.png", "ann.png"):
        assert (ROOT / "docs" / "benchmarks" / plot).stat().st_size > 5_000, plot


def test_headline_numbers_are_the_bench_files_own() -> None:
    """Read independently of the script: the training and encoding rates of both libraries."""
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    train = json.loads((ROOT / "bench" / "results" / "train_vs_st.json").read_text(encoding="utf-8"))
    encode = json.loads((ROOT / "bench" / "results" / "encode_vs_st.json").read_text(encoding="utf-8"))
    for mode in ("sentcl", "st"):
        assert f"{train['modes'][mode]['sentences_per_s']:.1f}" in page
        assert f"{encode['modes'][mode]['sentences_per_s']:.1f}" in page
    hnsw = json.loads(
        (ROOT / "bench" / "results" / "index_hnsw_1m_tuned_efc80.json").read_text(encoding="utf-8")
    )
    assert f"{hnsw['rows'][0]['recall_at_10']:.3f}" in page
