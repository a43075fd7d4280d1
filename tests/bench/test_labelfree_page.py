"""bench/labelfree_page.py: the committed page equals its rebuild from the committed summary, and the default of
eval.unlabelled_measure is the measure that page names the best predictor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


def test_the_committed_page_is_its_rebuild(tmp_path: Path) -> None:
    from bench.labelfree_page import PAGE, PLOT_NAME, build

    plot = tmp_path / PLOT_NAME
    assert build(ROOT, plot) == (ROOT / PAGE).read_text(encoding="utf-8")
    assert plot.stat().st_size > 10_000 and (ROOT / PAGE.parent / PLOT_NAME).is_file()


def test_the_default_measure_is_the_best_predictor() -> None:
    from bench.labelfree_page import SUMMARY, best_measure
    from sentcl.config import EvalConfig

    summary = json.loads((ROOT / SUMMARY).read_text(encoding="utf-8"))
    assert EvalConfig().unlabelled_measure == best_measure(summary)
    assert len(summary["points"]) >= 15


def test_spearman_of_the_summary_against_a_hand_written_rank_correlation() -> None:
    from bench.labelfree_page import SUMMARY

    summary = json.loads((ROOT / SUMMARY).read_text(encoding="utf-8"))

    def ranks(values: list[float]) -> list[float]:  # average ranks of ties, 1-based
        order = sorted(range(len(values)), key=lambda i: values[i])
        out = [0.0] * len(values)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
                j += 1
            for k in range(i, j + 1):
                out[order[k]] = (i + j) / 2 + 1
            i = j + 1
        return out

    for name, figure in summary["spearman_with_sts_avg"].items():
        pts = [
            (p["measures"][name], p["sts_avg"]) for p in summary["points"] if p["measures"][name] is not None
        ]
        a, b = ranks([x for x, _ in pts]), ranks([y for _, y in pts])
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        cov = sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True))
        var = (sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b)) ** 0.5
        assert figure["spearman"] == pytest.approx(cov / var, abs=1e-9), name
