"""The Benchmarks page (docs/benchmarks.md) and its three plots, written from committed results only.

Every number on the page is read here from a JSON file under bench/results/ (written by ``python -m bench.*``)
or from a run summary under docs/results/ (written by ``sentcl experiment``): the page cannot drift from them,
and ``tests/test_benchmarks_page.py`` checks that the committed page equals what this script writes.

    python scripts/bench_page.py            # rewrite docs/benchmarks.md and docs/benchmarks/*.png
    python scripts/bench_page.py --check    # exit 1 if docs/benchmarks.md differs from what it would write
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # ``python scripts/bench_page.py``: the bench package sits at the root
    sys.path.insert(0, str(ROOT))
BENCH = ROOT / "bench" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"
PLOTS = ROOT / "docs" / "benchmarks"
DISTILL_RUNS = ROOT / "docs" / "results" / "distillation-cpu" / "runs"


def _load(name: str) -> dict[str, Any]:
    return json.loads((BENCH / name).read_text(encoding="utf-8"))


def _sts_avg(run: str) -> float:
    """The seven-task STS average of a distillation run's committed summary (seed 42)."""
    results = json.loads((DISTILL_RUNS / run / "seed-42" / "results.json").read_text(encoding="utf-8"))
    return float(results["results"]["sts"]["avg"])


#: the frontier's points the quality table shows, by their name in the run
FRONTIER_POINTS = {
    "teacher": "teacher (6 layers)",
    "l3": "student (3 layers)",
    "l3-onnx-int8": "student, ONNX int8",
}


def conditions(result: dict[str, Any]) -> str:
    """The machine, threads and load of a result file, in words: ``AMD EPYC, 2 threads, load 3.4 → 2.9``."""
    machine = result["machine"]
    start, end = machine["loadavg_start"][0], result.get("loadavg_end", [float("nan")])[0]
    threads = machine["torch_threads"]
    return f"{machine['cpu']}, {threads} thread{'s' if threads != 1 else ''}, system load {start:.1f} → {end:.1f}"


def gather() -> dict[str, Any]:
    """The page's numbers, each from its committed file."""
    from bench.frontier_page import newest_run

    train, encode, onnx = _load("train_vs_st.json"), _load("encode_vs_st.json"), _load("encode_onnx.json")
    distill, index, hnsw = (
        _load("distill_speed.json"),
        _load("index.json"),
        _load("index_hnsw_1m_tuned_efc80.json"),
    )
    frontier_path, frontier = newest_run(ROOT)
    return {
        "conditions": {
            "train": f"`train_vs_st.json`: {conditions(train)}, batch {train['config']['batch_size']}, "
            f"max length {train['config']['max_length']}, {train['config']['rounds']} alternating rounds",
            "encode": f"`encode_vs_st.json`: {conditions(encode)}, {encode['config']['sentences']:,} mixed-length "
            f"sentences, batch {encode['config']['batch_size']}",
            "onnx": f"`encode_onnx.json`: {conditions(onnx)}, {onnx['config']['sentences']:,} sentences, "
            f"batch {onnx['config']['batch_size']}",
            "frontier": f"`{frontier_path.as_posix()}`: {conditions(frontier)}, {frontier['sentences']} distinct "
            f"STS-B test sentences, batch {frontier['config']['batch_size']}",
            "distill": f"`distill_speed.json`: {conditions(distill)}",
            "index": f"`index.json`, `index_hnsw_1m_tuned_efc80.json`: {conditions(index)} and "
            f"{conditions(hnsw)}",
        },
        "frontier": {
            label: (
                frontier["points"][name]["sentences_per_s"],
                frontier["points"][name]["speed_vs_teacher"],
                frontier["points"][name]["sts"]["avg"],
            )
            for name, label in FRONTIER_POINTS.items()
        },
        "distill_teacher_rate": distill["modes"]["teacher"]["sentences_per_s"],
        "train": {m: train["modes"][m] for m in ("sentcl", "st")},
        "train_speedup": train["speed_vs_st"]["sentcl"],
        "encode": {m: encode["modes"][m]["sentences_per_s"] for m in ("sentcl", "st", "sentcl-int8")},
        "encode_speedup": encode["speed_vs_st"],
        "onnx": {m: onnx["modes"][m]["sentences_per_s"] for m in ("st", "sentcl-onnx", "sentcl-onnx-int8")},
        "distill": {
            "teacher (6 layers)": (
                distill["modes"]["teacher"]["sentences_per_s"],
                _sts_avg("teacher-6-layers"),
            ),
            "student (3 layers)": (distill["modes"]["student"]["sentences_per_s"], _sts_avg("l3-0-2-4-mse")),
            "student, ONNX int8": (
                distill["modes"]["student-onnx-int8"]["sentences_per_s"],
                float(distill["student_int8_sts"]["avg"]),
            ),
        },
        "index": [r for r in index["rows"] if r["type"] in ("flat", "ivf", "ivfpq")],
        "hnsw": hnsw["rows"],
        "n": index["n"],
        "max_diff": encode["modes"]["sentcl"]["max_abs_diff_vs_st"],
    }


def _table(data: dict[str, Any]) -> list[str]:
    t, e, o = data["train"], data["encode"], data["onnx"]
    rows = [
        "| what (all-MiniLM-L6-v2, 2 CPU cores) | sentence-transformers | sentcl | sentcl / ST |",
        "|---|---:|---:|---:|",
        f"| training, sentences/s (batch 64, unsupervised SimCSE) | {t['st']['sentences_per_s']:.1f} | "
        f"{t['sentcl']['sentences_per_s']:.1f} | {data['train_speedup']:.2f}× |",
        f"| STS-B dev after those steps (Spearman × 100) | {t['st']['stsb_dev']:.2f} | {t['sentcl']['stsb_dev']:.2f} | |",
        f"| encoding, sentences/s (PyTorch fp32) | {e['st']:.1f} | {e['sentcl']:.1f} | "
        f"{data['encode_speedup']['sentcl']:.2f}× |",
        f"| encoding, sentences/s (sentcl: dynamic int8) | {e['st']:.1f} | {e['sentcl-int8']:.1f} | "
        f"{data['encode_speedup']['sentcl-int8']:.2f}× |",
        f"| encoding, sentences/s (ONNX fp32; a separate run) | {o['st']:.1f} (PyTorch) | {o['sentcl-onnx']:.1f} | "
        f"{o['sentcl-onnx'] / o['st']:.2f}× |",
        f"| encoding, sentences/s (ONNX int8; same run) | {o['st']:.1f} (PyTorch) | {o['sentcl-onnx-int8']:.1f} | "
        f"{o['sentcl-onnx-int8'] / o['st']:.2f}× |",
    ]
    return rows


def page(data: dict[str, Any]) -> str:
    best_hnsw = max((r for r in data["hnsw"] if r["recall_at_10"] >= 0.95), key=lambda r: r["qps"])
    exact = next(r for r in data["index"] if r["type"] == "flat")
    cond = data["conditions"]
    teacher_rate = data["frontier"]["teacher (6 layers)"][0]
    distill = data["distill"]
    lines = [
        "# Benchmarks",
        "",
        "sentcl against sentence-transformers on the same model, the same sentences and the same threads, on "
        "2-core CPU machines. Each number comes from a committed result file of `python -m bench.NAME` "
        "(`bench/results/`); `python scripts/bench_page.py` writes this page and its plots from them. How each "
        "benchmark is run: [performance](performance.md).",
        "",
        *_table(data),
        "",
        "Ratios compare two libraries measured in the same run; absolute rates differ between runs of a shared "
        "machine, so compare within a row. The fp32 embeddings of the two libraries agree to float rounding "
        f"(largest difference {data['max_diff']:.1e}), and so do the STS-B dev scores after the same steps.",
        "",
        "Conditions of each row (the result file, its machine, threads and the system load at start → end):",
        "",
        f"- training: {cond['train']};",
        f"- encoding, fp32 and int8: {cond['encode']};",
        f"- encoding, ONNX: {cond['onnx']}.",
        "",
        "## Training speed",
        "",
        "![Training speed: sentences per second, sentcl and sentence-transformers](benchmarks/train.png)",
        "",
        "## Encoding speed against quality",
        "",
        "A smaller student trades STS quality for speed ([Make it smaller and faster]"
        "(tutorials/smaller-faster.md)). Seven-task STS average (Spearman × 100) against sentences per second "
        "on one thread, in one run of `bench/frontier.py` (the [CPU frontier](results/frontier-cpu.md) shows "
        f"every point of it): {cond['frontier']}.",
        "",
        "| model | sentences/s | speed vs teacher | STS avg. |",
        "|---|---:|---:|---:|",
        *(
            f"| {name} | {rate:,.0f} | {ratio:.2f}× | {sts:.2f} |"
            for name, (rate, ratio, sts) in data["frontier"].items()
        ),
        "",
        "![Encoding speed against STS quality](benchmarks/encode_quality.png)",
        "",
        "## Approximate search: recall against queries per second",
        "",
        f"{data['n']:,} vectors of 384 dimensions, one search thread, recall@10 against the exact search "
        f"({exact['qps']:.1f} queries/s). HNSW at its tuned setting (ef_search {best_hnsw['ef_search']}) reaches "
        f"recall@10 {best_hnsw['recall_at_10']:.3f} at {best_hnsw['qps']:.0f} queries/s "
        f"([Search a large corpus](tutorials/search.md)). Conditions: {cond['index']}.",
        "",
        "![Recall@10 against queries per second, per index type](benchmarks/ann.png)",
        "",
        "## Why the rates differ between pages",
        "",
        "A rate in sentences per second holds for its run only: the machine, the threads, the sentences, the "
        "batch and the other jobs on a shared machine all change it. The pages quote these runs:",
        "",
        f"- the teacher at {teacher_rate:,.0f} sentences/s, here and on the CPU frontier: one thread, "
        f"{cond['frontier']};",
        f"- sentence-transformers at {data['encode']['st']:.1f} and sentcl at {data['encode']['sentcl']:.1f} "
        f"sentences/s in the first table: two threads, {cond['encode']};",
        f"- the teacher at {data['distill_teacher_rate']:.1f} sentences/s in the "
        f"[distillation grid](results/distillation-cpu.md): one thread, {cond['distill']}, the student "
        f"there trained for the grid's short budget (STS {distill['student (3 layers)'][1]:.2f}).",
        "",
        "The 3-layer student above is the recipe's student of seed 42; the mean of its three seeds is on the "
        "[layer students](results/layer-students-cpu.md) page. Compare ratios measured in one run, as the "
        "tables do.",
        "",
    ]
    return "\n".join(lines)


def caption(data: dict[str, Any], key: str, what: str) -> str:
    """A figure's caption: the model, the data and the machine of its result file."""
    return f"{what}; {data['conditions'][key]}".replace("`", "")


def figures(data: dict[str, Any]) -> dict[str, Any]:
    """The page's three figures by file name; each names its model, data and machine, and no labels overlap."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sentcl.report.figure_rules import add_caption, mark_axis_break, place_labels

    made = {}
    fig, ax = plt.subplots(figsize=(7, 2.8))
    names = ["sentence-transformers", "sentcl"]
    rates = [data["train"]["st"]["sentences_per_s"], data["train"]["sentcl"]["sentences_per_s"]]
    bars = ax.barh(names, rates, color=["#999999", "#3b6ea8"])
    ax.bar_label(bars, fmt="%.1f", fontsize=8, label_type="center", color="white")
    ax.set_xlim(0, max(rates) * 1.1)
    ax.set_xlabel("training sentences per second (sentences/s, higher is better)")
    add_caption(fig, caption(data, "train", "all-MiniLM-L6-v2, unsupervised SimCSE on wiki1m_prefix"))
    made["train.png"] = fig

    fig, ax = plt.subplots(figsize=(7, 4))
    points = [(name, ratio, sts) for name, (_, ratio, sts) in data["frontier"].items()]
    ax.scatter([p[1] for p in points], [p[2] for p in points], s=40)
    ax.set_xlabel("speed against the teacher's PyTorch encode, one thread (x, higher is better)")
    ax.set_ylabel("STS average, 7 tasks (Spearman × 100)")
    ax.margins(x=0.3, y=0.3)
    mark_axis_break(ax)
    add_caption(fig, caption(data, "frontier", "all-MiniLM-L6-v2 and its 3-layer student"))
    place_labels(ax, points, fontsize=8)
    made["encode_quality.png"] = fig

    fig, ax = plt.subplots(figsize=(7, 4.4))
    for kind in ("ivf", "ivfpq"):
        rows = [r for r in data["index"] if r["type"] == kind]
        ax.plot([r["qps"] for r in rows], [r["recall_at_10"] for r in rows], "o-", label=kind.upper())
    ax.plot([r["qps"] for r in data["hnsw"]], [r["recall_at_10"] for r in data["hnsw"]], "o-", label="HNSW")
    exact = next(r for r in data["index"] if r["type"] == "flat")
    ax.plot([exact["qps"]], [1.0], "k*", markersize=10, label="exact")
    ax.set_xscale("log")
    ax.set_xlabel("queries per second, one thread (queries/s, log scale)")
    ax.set_ylabel("recall@10 (share of the exact top 10)")
    ax.legend(loc="lower left", frameon=False)
    mark_axis_break(ax)
    add_caption(fig, caption(data, "index", f"{data['n']:,} generated 384-d vectors (clustered)"))
    made["ann.png"] = fig
    return made


def plots(data: dict[str, Any], out: Path) -> None:
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    for name, fig in figures(data).items():
        fig.savefig(out / name, dpi=100, metadata={"Software": None})
        plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="Only compare docs/benchmarks.md; write nothing."
    )
    args = parser.parse_args(argv)
    data = gather()
    text = page(data)
    if args.check:
        same = PAGE.is_file() and PAGE.read_text(encoding="utf-8") == text
        print(
            "docs/benchmarks.md is up to date"
            if same
            else "docs/benchmarks.md differs: run scripts/bench_page.py"
        )
        return 0 if same else 1
    PAGE.write_text(text, encoding="utf-8")
    plots(data, PLOTS)
    print(f"wrote {PAGE.relative_to(ROOT)} and {PLOTS.relative_to(ROOT)}/*.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
