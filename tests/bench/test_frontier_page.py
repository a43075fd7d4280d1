"""bench/frontier_page.py: the committed page equals its rebuild from the committed runs, and the Pareto rule
against a hand-written reference on generated points."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


def test_the_committed_page_is_its_rebuild(tmp_path: Path) -> None:
    from bench.frontier_page import PAGE, PLOT_NAME, build

    plot = tmp_path / PLOT_NAME
    assert build(ROOT, plot) == (ROOT / PAGE).read_text(encoding="utf-8")
    assert plot.stat().st_size > 10_000 and (ROOT / PAGE.parent / PLOT_NAME).is_file()


def dominated(p: tuple[str, float, float], others: list[tuple[str, float, float]]) -> bool:
    return any(o[1] >= p[1] and o[2] >= p[2] and (o[1], o[2]) != (p[1], p[2]) for o in others)


values = st.floats(min_value=0.1, max_value=1e5, allow_nan=False)


@given(st.lists(st.tuples(values, values), min_size=1, max_size=12))
def test_pareto_keeps_exactly_the_undominated(pairs: list[tuple[float, float]]) -> None:
    from sentcl.report.pareto import pareto

    points = [(f"p{i}", s, q) for i, (s, q) in enumerate(pairs)]
    expected = {p[0] for p in points if not dominated(p, points)}
    kept = pareto(points)
    assert set(kept) == expected and expected  # a non-empty set always has an undominated point
    speeds = [dict((n, s) for n, s, _ in points)[n] for n in kept]
    assert speeds == sorted(speeds)


def test_a_peer_above_the_frontier_is_named() -> None:
    from bench.frontier_page import above_frontier

    def row(family: str, speed: float, sts: float) -> dict:
        return {
            "family": family,
            "speed_vs_teacher": speed / 100,
            "sentences_per_s": speed,
            "sts": {"avg": sts},
        }

    run = {
        "points": {
            "teacher": row("sentcl", 100, 78.9),
            "static": row("sentcl", 10_000, 70.0),
            "fast-peer": row("peer", 20_000, 60.0),  # faster than every sentcl point: above
            "good-peer": row("peer", 5_000, 71.0),  # static is faster but worse: above
            "beaten": row("peer", 5_000, 65.0),  # static is faster and better
        }
    }
    assert above_frontier(run) == ["fast-peer", "good-peer"]


def test_points_are_compared_by_their_ratio_to_the_teacher_not_their_median_rates() -> None:
    """Two points' median sentences/s come from different rounds; the per-round ratio to the teacher is what the
    page compares. Here the peer's median rate is higher, but in every round it ran slower than sentcl's point."""
    from bench.frontier_page import above_frontier

    def row(family: str, rate: float, ratio: float) -> dict:
        return {"family": family, "sentences_per_s": rate, "speed_vs_teacher": ratio, "sts": {"avg": 78.88}}

    run = {"points": {"ours": row("sentcl", 855, 2.34), "peer": row("peer", 869, 2.13)}}
    assert above_frontier(run) == []
    run["points"]["peer"] = row("peer", 800, 2.40)
    assert above_frontier(run) == ["peer"]


def test_the_caption_says_how_the_peers_were_batched() -> None:
    from bench.frontier_page import peer_batch

    assert peer_batch({"batch_size": 128}) == ""  # a run from before the option: batched as sentcl's points
    assert peer_batch({"batch_size": 128, "peer_batch_size": 128}) == ""
    assert "each library's own default" in peer_batch({"batch_size": 128, "peer_batch_size": 0})
    assert peer_batch({"batch_size": 128, "peer_batch_size": 64}) == " (the peers: 64)"


def test_the_tokenlearn_target_takes_the_best_student_of_the_largest_shared_corpus(tmp_path: Path) -> None:
    """Two committed runs on the same corpus: the pair with the larger gap speaks for the target, whichever
    file comes first; within a run, the stronger student against the stronger tokenlearn."""
    import json

    from bench.frontier_static import WEIGHTED, WHOLE, largest_same_corpus

    def run(students: dict[str, float], peer: float) -> dict:
        rows = {
            n: {"family": "sentcl", "corpus_sentences": 500, "sts": {"avg": a}} for n, a in students.items()
        }
        rows["tokenlearn"] = {"family": "peer", "corpus_sentences": 500, "sts": {"avg": peer}}
        rows["tokenlearn-weak"] = {"family": "peer", "corpus_sentences": 500, "sts": {"avg": peer - 5}}
        return {"points": rows}

    for path, body in ((WHOLE, run({"a": 71.0}, 70.0)), (WEIGHTED, run({"b": 72.0, "c": 73.0}, 70.0))):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(json.dumps(body), encoding="utf-8")
    path, pair = largest_same_corpus(tmp_path)  # type: ignore[misc]
    assert path == WEIGHTED and pair["student"] == "c" and pair["peer"] == "tokenlearn"
    assert pair["gap"] == pytest.approx(3.0)
