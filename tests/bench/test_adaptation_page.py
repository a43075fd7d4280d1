"""bench/adaptation_page.py: the page is rebuilt from a small fixture of cell summaries with the verdicts a
hand-written rule gives, and the committed page equals its rebuild from the committed cells."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


def _cell(
    root: Path, domain: str, method: str, seed: int | None, score: float, measures: dict | None = None
) -> None:
    settings = {"domain": domain, "method": method, "start": "all-MiniLM-L6-v2", "split": f"{domain} split"}
    if method != "zero-shot":
        settings |= {"seed": seed, "steps": 32, "batch_size": 16, "max_length": 32}
    result = {"spearman": score} if domain.startswith("stsb") else {"acc": score}
    name = "zero-shot.json" if method == "zero-shot" else f"{method}-seed{seed}.json"
    path = root / "bench" / "results" / "adaptation" / domain / name
    path.parent.mkdir(parents=True, exist_ok=True)
    summary = {"score": score, "result": result, "cpu_seconds": 60.0, "settings": settings, "key": "k"}
    if measures is not None:
        summary["label_free"] = {"sentences": 500, "measures": measures}
    path.write_text(json.dumps(summary), encoding="utf-8")


def test_the_page_from_a_fixture(tmp_path: Path) -> None:
    from bench.adaptation_page import build

    _cell(tmp_path, "stsb-news", "zero-shot", None, 70.0)
    for seed, (simcse, tsdae) in enumerate([(71.0, 69.9), (71.5, 70.2), (71.2, 70.1)]):
        _cell(tmp_path, "stsb-news", "unsup_simcse", seed, simcse)  # mean 71.23 > 70 + spread 0.5: helps
        _cell(tmp_path, "stsb-news", "tsdae", seed, tsdae)  # mean 70.07, spread 0.3: no clear change
    _cell(tmp_path, "trec", "zero-shot", None, 88.0)
    for seed, score in enumerate([86.0, 86.4]):  # two seeds so far: no verdict
        _cell(tmp_path, "trec", "contrastive_tension", seed, score)
    _cell(tmp_path, "trec", "tsdae", 0, 80.0)
    page = build(tmp_path)
    assert "| unsupervised SimCSE | 71.23 ± 0.50 (71.00, 71.50, 71.20) | +1.23 | helps | 60 |" in page
    assert "| TSDAE | 70.07 ± 0.30 (69.90, 70.20, 70.10) | +0.07 | no clear change | 60 |" in page
    assert (
        "| Contrastive Tension (in-batch) | 86.20 ± 0.40 (86.00, 86.40) | -1.80 | 2 of 3 seeds: not judged |"
        in page
    )
    assert "| TSDAE, then SimCSE | not run yet |" in page
    assert "- stsb-news: unsupervised SimCSE" in page and "- trec: no method helps (yet)" in page
    assert "| unsupervised SimCSE | +1.23 (helps) |  |" in page  # at a glance: stsb-news, then trec
    assert "| Contrastive Tension (in-batch) |  | -1.80 (2/3 seeds) |" in page
    assert "Budget: 32 steps x 16 sentences = 512 sentences" in page
    assert "100 x Spearman" in page and "accuracy %" in page


@pytest.mark.parametrize(
    ("scores", "zero", "want"),
    [
        ([2.0, 2.1, 2.2], 1.0, "helps"),
        ([0.0, 0.1, 0.2], 1.0, "hurts"),
        ([0.5, 1.5, 1.0], 1.0, "no clear change"),
    ],
)
def test_verdict_against_the_spread(scores: list[float], zero: float, want: str) -> None:
    from bench.adaptation_page import verdict

    assert verdict(scores, zero) == want


def test_the_committed_page_is_its_rebuild() -> None:
    from bench.adaptation_page import PAGE, build

    assert build(ROOT) == (ROOT / PAGE).read_text(encoding="utf-8")


def test_label_free_measures_beside_the_scores(tmp_path: Path) -> None:
    """Spearman across the domain's cells with each measure signed better-is-higher, and the cell each picks."""
    from bench.adaptation_page import build

    _cell(
        tmp_path,
        "cr",
        "zero-shot",
        None,
        80.0,
        {"uniformity": -3.0, "rankme": 10.0, "alignment_dropout": None},
    )
    for seed, (score, uni, rank) in enumerate([(82.0, -3.5, 12.0), (81.0, -3.2, 30.0), (79.0, -2.0, 11.0)]):
        _cell(
            tmp_path,
            "cr",
            "tsdae",
            seed,
            score,
            {"uniformity": uni, "rankme": rank, "alignment_dropout": None},
        )
    page = build(tmp_path)
    # uniformity (lower is better) orders the four cells exactly as their scores: rho +1, picks seed 0 (82.00)
    assert "| uniformity | +1.00 | TSDAE, seed 0 | 82.00 | +0.00 | +2.00 |" in page
    # rankme: ranks 10, 12, 30, 11 against scores 80, 82, 81, 79 -> rho 0.60; picks seed 1 (81.00)
    assert "| rankme | +0.60 | TSDAE, seed 1 | 81.00 | -1.00 | +1.00 |" in page
    assert "| alignment_dropout |" not in page  # a measure that does not apply is left out, not ranked


def test_cells_of_different_code_are_named_stale(tmp_path: Path) -> None:
    from bench.adaptation_page import build

    _cell(tmp_path, "cr", "zero-shot", None, 80.0)
    _cell(tmp_path, "cr", "tsdae", 0, 81.0)
    path = tmp_path / "bench" / "results" / "adaptation" / "cr" / "tsdae-seed0.json"
    summary = json.loads(path.read_text(encoding="utf-8")) | {"code": "new", "commit": "bbbbbbbbbb"}
    path.write_text(json.dumps(summary), encoding="utf-8")
    page = build(tmp_path)
    assert (
        "Warning: the cells were made by 2 different versions of the code (commits bbbbbbb, unrecorded)"
        in page
    )
