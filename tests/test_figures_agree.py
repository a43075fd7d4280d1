"""One source per figure: a measurement stated on several pages has one value, the one its committed result file
holds. Each measurement below names its source (a JSON under bench/results or the run summaries it is computed
from) and where each page states it; a page that states it differently fails, and so does a measurement that
fewer than two pages state (then it needs no entry here)."""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def _json(name: str) -> dict:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def _frontier() -> dict:
    sys.path.insert(0, str(ROOT))
    from bench.frontier_page import newest_run

    return newest_run(ROOT)[1]


def _three_seeds() -> str:
    sys.path.insert(0, str(ROOT))
    from bench.frontier_targets import seed_scores

    seeds = list(seed_scores(ROOT).values())
    return f"{statistics.mean(seeds):.2f} ± {statistics.stdev(seeds):.2f}"


def _shrink_chosen(field: str, budget: str = "10x") -> str:
    """`sentcl shrink all-MiniLM-L6-v2 --budget 10x` (or 100x)'s chosen model (bench/shrink_minilm.sh): its speed
    or the share of the teacher's score it keeps."""
    run = _json(f"shrink/minilm-{budget}-shrink.json")
    row = run["rows"][run["chosen"]]
    return f"{row['speed_vs_teacher']:.1f}x" if field == "speed" else f"{100 * row['kept']:.1f}%"


@dataclass(frozen=True)
class Measurement:
    """A figure, its one source, and the pattern (group 1: the value) by which each page states it."""

    name: str
    source: Callable[[], str]
    statements: dict[str, str]


MEASUREMENTS = [
    Measurement(
        "the teacher's sentences/s on one thread (the CPU frontier's run)",
        lambda: f"{_frontier()['points']['teacher']['sentences_per_s']:,.0f}",
        {
            "docs/benchmarks.md": r"\| teacher \(6 layers\) \| ([\d,]+) \|",
            "docs/results/frontier-cpu.md": r"\| teacher \| sentcl \| pytorch \| [\d.]+ \| [\d.]+% \| ([\d,]+) \|",
        },
    ),
    Measurement(
        "the 3-layer student's STS average (the CPU frontier's run)",
        lambda: f"{_frontier()['points']['l3']['sts']['avg']:.2f}",
        {
            "docs/benchmarks.md": r"\| student \(3 layers\) \| [\d,]+ \| [\d.]+× \| ([\d.]+) \|",
            "docs/results/frontier-cpu.md": r"\| l3 \| sentcl \| pytorch \| ([\d.]+) \|",
        },
    ),
    Measurement(
        "the 3-layer student's int8 export's sentences/s (the CPU frontier's run)",
        lambda: f"{_frontier()['points']['l3-onnx-int8']['sentences_per_s']:,.0f}",
        {
            "docs/benchmarks.md": r"\| student, ONNX int8 \| ([\d,]+) \|",
            "docs/results/frontier-cpu.md": r"\| l3-onnx-int8 \| sentcl \| onnx-int8 \| [\d.]+ \| [\d.]+% \| ([\d,]+) \|",
        },
    ),
    Measurement(
        "the recipe's 3-layer student, mean ± sd of three seeds",
        _three_seeds,
        {
            "README.md": r"student scores ([\d.]+ ± [\d.]+) on the seven STS tasks over three seeds",
            "docs/tutorials/smaller-faster.md": r"student scores ([\d.]+ ± [\d.]+) on the seven tasks over three seeds",
            "docs/results/frontier-cpu.md": r"three seeds: ([\d.]+ \+- [\d.]+) over",
        },
    ),
    Measurement(
        "sentcl shrink --budget 10x: the chosen model's speed (bench/shrink_minilm.sh)",
        lambda: _shrink_chosen("speed"),
        {
            "README.md": r"exported\s+to int8, at ([\d.]+x) the\s+teacher's speed",
            "docs/tutorials/smaller-faster.md": r"[\w-]+ meets 10x: ([\d.]+x) the teacher's speed",
        },
    ),
    Measurement(
        "sentcl shrink --budget 100x on the whole corpus: the chosen model's speed (bench/shrink_minilm.sh)",
        lambda: _shrink_chosen("speed", "100x"),
        {
            "README.md": r"`--budget 100x` chose\s+the weighted static student at ([\d.]+x)",
            "docs/tutorials/smaller-faster.md": r"static-[\w-]+ meets 100x: ([\d.]+x) the teacher's speed",
        },
    ),
    Measurement(
        "sentcl shrink --budget 100x on the whole corpus: the share of the teacher's score its chosen model keeps",
        lambda: _shrink_chosen("kept", "100x"),
        {
            "README.md": r"`--budget 100x` chose\s+the weighted static student at [\d.]+x keeping ([\d.]+%)",
            "docs/tutorials/smaller-faster.md": r"static-[\w-]+ meets 100x: [\d.]+x the teacher's speed at 1 thread\(s\), keeping ([\d.]+%)",
        },
    ),
    Measurement(
        "sentcl shrink --budget 10x: the share of the teacher's score its chosen model keeps",
        lambda: _shrink_chosen("kept"),
        {
            "README.md": r"teacher's speed keeping ([\d.]+%) of its STS score",
            "docs/tutorials/smaller-faster.md": r"[\w-]+ meets 10x: [\d.]+x the teacher's speed at 1 thread\(s\), keeping ([\d.]+%)",
        },
    ),
    Measurement(
        "training speed against sentence-transformers",
        lambda: f"{_json('train_vs_st.json')['speed_vs_st']['sentcl']:.2f}×",
        {
            "docs/benchmarks.md": r"\| training, sentences/s [^|]*\| [\d.]+ \| [\d.]+ \| ([\d.]+×) \|",
            "docs/performance.md": r"\| training fp32 \|[^|]*\| ([\d.]+×) the peer's s/step",
        },
    ),
    Measurement(
        "encoding speed against sentence-transformers (fp32)",
        lambda: f"{_json('encode_vs_st.json')['speed_vs_st']['sentcl']:.2f}×",
        {
            "docs/benchmarks.md": r"\| encoding, sentences/s \(PyTorch fp32\) \| [\d.]+ \| [\d.]+ \| ([\d.]+×) \|",
            "docs/performance.md": r"\| encoding \|[^|]*\| ([\d.]+×) the peer on",
        },
    ),
    Measurement(
        "HNSW's recall@10 at 1,000,000 vectors (efConstruction 80, tuned)",
        lambda: f"{_json('index_hnsw_1m_tuned_efc80.json')['rows'][0]['recall_at_10']:.3f}",
        {
            "docs/benchmarks.md": r"reaches recall@10 ([\d.]+) at",
            "docs/performance.md": r"HNSW ([\d.]+) at [\d.]+× \(efConstruction 80\)",
        },
    ),
]


def statements(measurement: Measurement, root: Path = ROOT) -> dict[str, list[str]]:
    """page -> the values it states for the measurement (``±`` and ``+-`` read alike)."""
    found = {}
    for page, pattern in measurement.statements.items():
        path = root / page
        if path.is_file():
            values = re.findall(pattern, path.read_text(encoding="utf-8"))
            if values:
                found[page] = [v.replace("+-", "±") for v in values]
    return found


def disagreements(measurement: Measurement, root: Path = ROOT) -> list[str]:
    want = measurement.source()
    return [
        f"{page} states {value}, the source {want}"
        for page, values in statements(measurement, root).items()
        for value in values
        if value != want
    ]


@pytest.mark.parametrize("measurement", MEASUREMENTS, ids=lambda m: m.name)
def test_every_page_states_a_measurement_as_its_source_has_it(measurement: Measurement) -> None:
    assert len(statements(measurement)) >= 2, "stated on fewer than two pages: no agreement to keep"
    assert disagreements(measurement) == []


def test_a_page_that_states_another_value_is_found(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("| teacher | 407 |\n", encoding="utf-8")
    (tmp_path / "b.md").write_text(
        "the teacher at 146.3 sentences/s, and | teacher | 407 |\n", encoding="utf-8"
    )
    m = Measurement(
        "teacher", lambda: "407", {"a.md": r"\| teacher \| ([\d.,]+) \|", "b.md": r"teacher at ([\d.]+)"}
    )
    assert disagreements(m, tmp_path) == ["b.md states 146.3, the source 407"]
