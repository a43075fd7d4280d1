"""The frontier's search and service points, read from their own committed bench results.

Search points (``bench.index_binary`` on the real 203k offline sentences): each index's recall@10 against exact
search, its memory and its fraction of the float index's, and its one-query and batched QPS against the exact
flat index's in the same run. The service point (``bench.serve_load``): served sentences/s beside the in-process
encode's in the same rounds, the median per-round ratio, latency and errors: the service's defaults, and one
thread a side. ``bench.frontier_page`` reads them from the committed results named here when it builds the page
(a frontier run also records the rows it found when it ran).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SEARCH_RESULTS = ("bench/results/index_binary.json", "bench/results/index_binary_hnsw.json")
SERVE_RESULT = "bench/results/serve_load_continuous.json"
SERVE_QUIET = "bench/results/serve_load_quiet.json"  # the target's figure: the machine otherwise idle
SERVE_RESULTS = (SERVE_QUIET, SERVE_RESULT, "bench/results/serve_load_continuous_1thread.json")
SERVE_REPEATS = "bench/results/serve_load_quiet_r9_repeats.json"  # SERVE_QUIET's command, run again
SEARCH_KEYS = (
    "n",
    "recall_at_10",
    "memory_bytes",
    "memory_fraction",
    "qps",
    "qps_one_query",
    "x_exact_one_query",
)


def _read(root: Path, path: str) -> dict[str, Any]:
    file = root / path
    if not file.is_file():
        raise FileNotFoundError(f"{file}: no such bench result (give another with the frontier's options)")
    return json.loads(file.read_text(encoding="utf-8"))


def search_points(root: Path, paths: list[str]) -> list[dict[str, Any]]:
    """One row per index of the results: the exact flat index once (from the first file), then every other."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        result = _read(root, path)
        for row in result["rows"]:
            if row["type"] == "flat" and rows:
                continue  # each file times its own flat index; the ratios are to that one
            point = {key: row.get(key) for key in SEARCH_KEYS}
            name = "exact (flat, float32)" if row["type"] == "flat" else row["type"]
            params = row.get("params") or {}
            label = ", ".join(
                f"{k} {v}" for k, v in params.items() if k not in ("binary_index", "train_size")
            )
            rows.append(
                {
                    **point,
                    "index": f"{name} ({label})" if label else name,
                    "source": path,
                    "command": result["command"],
                }
            )
    return rows


def serve_point(root: Path, path: str) -> dict[str, Any]:
    """The service's summary: served and in-process sentences/s, the median per-round ratio, p50, errors."""
    result = _read(root, path)
    summary, settings = result["summary"], result["settings"]
    return {
        "served_sentences_per_s": summary["serve_sentences_per_s"],
        "in_process_sentences_per_s": summary["in_process_sentences_per_s"],
        "ratio_median": summary["ratio_median"],
        "p50_ms": summary["p50_ms"],
        "errors": summary["errors"],
        "clients": settings.get("clients"),
        "threads": settings.get("threads"),
        "rounds": settings.get("rounds"),
        "loadavg_start": result.get("machine", {}).get("loadavg_start", []),
        "source": path,
        "command": result["command"],
    }


def serve_repeats(root: Path, path: str = SERVE_REPEATS) -> str:
    """One sentence: the median ratio of each run of the quiet figure's command (the repeats record), or ""
    where there is no such record."""
    if not (root / path).is_file():
        return ""
    result = _read(root, path)
    ratios = ", ".join(f"{x:.2f}x" for x in result["ratio_medians"])
    return (
        f"Runs of the first row's command, one after another with the machine otherwise idle (the first is "
        f"that row): {ratios}; median {result['median']:.2f}x (`{path}`)."
    )


def search_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| index | vectors | recall@10 | memory MiB | of the float index | QPS, one query | x exact, one query | "
        "QPS, batched |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        x = row["x_exact_one_query"]
        lines.append(
            f"| {row['index']} | {row['n']:,} | {row['recall_at_10']:.4f} | {row['memory_bytes'] / 2**20:.1f} | "
            f"1/{1 / row['memory_fraction']:.1f} | {row['qps_one_query']:,.0f} | {'-' if x is None else f'{x:.1f}x'} | "
            f"{row['qps']:,.0f} |"
        )
    commands = sorted({f"`{row['command']}` (`{row['source']}`)" for row in rows})
    return "\n".join(lines) + "\n\nFrom " + "; ".join(commands) + "."


def serve_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| threads a side | served sentences/s | in-process sentences/s | served / in-process (median of rounds) | "
        "p50 ms | errors | clients | load average at the start |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        load = ", ".join(f"{x:.1f}" for x in row["loadavg_start"])
        lines.append(
            f"| {row['threads']} | {row['served_sentences_per_s']:,.1f} | {row['in_process_sentences_per_s']:,.1f} | "
            f"{row['ratio_median']:.2f}x | {row['p50_ms']:,.0f} | {row['errors']} | {row['clients']} | {load} |"
        )
    commands = "; ".join(f"`{row['command']}` (`{row['source']}`, {row['rounds']} rounds)" for row in rows)
    return "\n".join(lines) + "\n\nFrom " + commands + "."
