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


def gather() -> dict[str, Any]:
    """The page's numbers, each from its committed file."""
    train, encode, onnx = _load("train_vs_st.json"), _load("encode_vs_st.json"), _load("encode_onnx.json")
    distill, index, hnsw = (
        _load("distill_speed.json"),
        _load("index.json"),
        _load("index_hnsw_1m_tuned_efc80.json"),
    )
    return {
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
    lines = [
        "# Benchmarks",
        "",
        "sentcl against sentence-transformers on the same model, the same sentences and the same threads, on a "
        "2-core CPU machine. Each number comes from a committed result file of `python -m bench.NAME` "
        "(`bench/results/`); `python scripts/bench_page.py` writes this page and its plots from them. How each "
        "benchmark is run, and every result in full: the [performance records](performance.md).",
        "",
        *_table(data),
        "",
        "Ratios compare two libraries measured in the same run; absolute rates differ between runs of a shared "
        "machine, so compare within a row. The fp32 embeddings of the two libraries agree to float rounding "
        f"(largest difference {data['max_diff']:.1e}), and so do the STS-B dev scores after the same steps.",
        "",
        "## Training speed",
        "",
        "![Training speed: sentences per second, sentcl and sentence-transformers](benchmarks/train.png)",
        "",
        "## Encoding speed against quality",
        "",
        "A smaller student trades STS quality for speed ([Make it smaller and faster]"
        "(tutorials/smaller-faster.md)). Seven-task STS average (Spearman × 100) against sentences per second "
        "on one thread:",
        "",
        "| model | sentences/s | STS avg. |",
        "|---|---:|---:|",
        *(f"| {name} | {rate:.1f} | {sts:.2f} |" for name, (rate, sts) in data["distill"].items()),
        "",
        "![Encoding speed against STS quality](benchmarks/encode_quality.png)",
        "",
        "## Approximate search: recall against queries per second",
        "",
        f"{data['n']:,} vectors of 384 dimensions, one search thread, recall@10 against the exact search "
        f"({exact['qps']:.1f} queries/s). HNSW at its tuned setting (ef_search {best_hnsw['ef_search']}) reaches "
        f"recall@10 {best_hnsw['recall_at_10']:.3f} at {best_hnsw['qps']:.0f} queries/s "
        "([Search a large corpus](tutorials/search.md)).",
        "",
        "![Recall@10 against queries per second, per index type](benchmarks/ann.png)",
        "",
    ]
    return "\n".join(lines)


def plots(data: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 2.2))
    names = ["sentence-transformers", "sentcl"]
    rates = [data["train"]["st"]["sentences_per_s"], data["train"]["sentcl"]["sentences_per_s"]]
    ax.barh(names, rates, color=["#999999", "#3b6ea8"])
    ax.set_xlabel("training sentences per second (higher is better)")
    fig.tight_layout()
    fig.savefig(out / "train.png", dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, (rate, sts) in data["distill"].items():
        ax.scatter(rate, sts, s=40)
        ax.annotate(name, (rate, sts), textcoords="offset points", xytext=(6, 4))
    ax.set_xlabel("sentences per second, one thread (higher is better)")
    ax.set_ylabel("STS average, Spearman × 100")
    ax.margins(x=0.3, y=0.2)
    fig.tight_layout()
    fig.savefig(out / "encode_quality.png", dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.8))
    for kind in ("ivf", "ivfpq"):
        rows = [r for r in data["index"] if r["type"] == kind]
        ax.plot([r["qps"] for r in rows], [r["recall_at_10"] for r in rows], "o-", label=kind.upper())
    ax.plot([r["qps"] for r in data["hnsw"]], [r["recall_at_10"] for r in data["hnsw"]], "o-", label="HNSW")
    exact = next(r for r in data["index"] if r["type"] == "flat")
    ax.plot([exact["qps"]], [1.0], "k*", markersize=10, label="exact")
    ax.set_xscale("log")
    ax.set_xlabel("queries per second, one thread (log scale)")
    ax.set_ylabel("recall@10")
    ax.legend(loc="lower left", frameon=False)
    fig.tight_layout()
    fig.savefig(out / "ann.png", dpi=100)
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
