"""The CPU frontier's targets, each with its measured figure: from a ``bench.frontier`` run (its points, search
and service rows) and the 3-layer student's committed seed summaries.

Every line names the target as the frontier's plan states it, the figure measured, and whether it is met.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

SEEDS = Path("docs/results/layer-students-cpu/seeds")  # seed-<N>/results.json of the recipe distill_minilm_l3


def seed_scores(root: Path) -> dict[int, float]:
    """seed -> the seven-task STS average of the 3-layer student's run summary."""
    from sentcl.evaluation.runner import headline

    found = {}
    for file in sorted((root / SEEDS).glob("seed-*/results.json")):
        results = json.loads(file.read_text(encoding="utf-8"))["results"]["sts"]
        found[int(file.parent.name.removeprefix("seed-"))] = headline("sts", results)
    return found


def _met(ok: bool) -> str:
    return "met" if ok else "not met"


def static_lines(rows: dict[str, Any], teacher: float, root: Path) -> list[str]:
    """The static targets: against Model2Vec's settled ``distill`` figure (its newest version, from the static
    section's runs; the frontier run's own Model2Vec row where none is committed), 95% of the teacher, and
    tokenlearn on the same corpus."""
    from bench.frontier_static import largest_same_corpus, settled_model2vec

    settled = settled_model2vec(root)
    if settled is not None:
        version = (settled.get("versions") or {}).get("model2vec", "?")
        peer, whose = settled["sts"]["avg"], f"Model2Vec {version}'s (`{settled['source']}`)"
    else:
        peer, whose = rows.get("model2vec", {}).get("sts", {}).get("avg"), "Model2Vec's (this run)"
    lines = []
    for name, row in rows.items():
        avg = row["sts"]["avg"]
        if row["runtime"] != "static" or avg is None or peer is None:
            continue
        gap, speed = avg - peer, row["speed_vs_teacher"]
        lines.append(
            f"- A static student >= 6 points above Model2Vec's `distill` at >= 100x the teacher: `{name}` scores "
            f"{avg:.2f}, {gap:+.2f} points against {whose} {peer:.2f}, at {speed:.1f}x the teacher: "
            f"{_met(gap >= 6 and speed >= 100)}."
        )
        lines.append(
            f"- A static student >= 95% of the teacher at >= 100x its speed: `{name}` keeps {avg / teacher:.1%} "
            f"at {speed:.1f}x: {_met(avg >= 0.95 * teacher and speed >= 100)}."
        )
    lines += realistic_lines(root)
    found = largest_same_corpus(root)
    if found is not None:
        path, pair = found
        lines.append(
            f"- A static student >= tokenlearn + 2 points on the same corpus ({pair['corpus']:,} sentences, "
            f"`{path.as_posix()}`): `{pair['student']}` against `{pair['peer']}`, {pair['gap']:+.2f} points: "
            f"{_met(pair['gap'] >= 2)}."
        )
    return lines


def realistic_lines(root: Path) -> list[str]:
    """The 95% target for the static students timed only on the realistic load (the weighted form's run:
    its folders are not points of the frontier run)."""
    from bench.frontier_static import WEIGHTED, committed

    run = committed(root, WEIGHTED)
    if run is None:
        return []
    teacher = run["points"]["teacher"]["sts"]["avg"]
    lines = []
    for name, row in run["points"].items():
        avg = (row.get("sts") or {}).get("avg")
        if row["family"] != "sentcl" or not row.get("corpus_sentences") or "@" in name or avg is None:
            continue
        speed = row["speed_vs_teacher"]
        lines.append(
            f"- A static student >= 95% of the teacher at >= 100x its speed, on the realistic load "
            f"(`{WEIGHTED.as_posix()}`): `{name}` keeps {avg / teacher:.1%} at {speed:.1f}x: "
            f"{_met(avg >= 0.95 * teacher and speed >= 100)}."
        )
    return lines


def layer_lines(rows: dict[str, Any], teacher: float, root: Path) -> list[str]:
    lines = []
    seeds = seed_scores(root)
    if seeds:
        mean = statistics.mean(seeds.values())
        sd = statistics.stdev(seeds.values()) if len(seeds) > 1 else 0.0
        each = ", ".join(f"{seed}: {avg:.2f}" for seed, avg in sorted(seeds.items()))
        lines.append(
            f"- The 3-layer student keeps >= 97% of the teacher, three seeds: {mean:.2f} +- {sd:.2f} over "
            f"{len(seeds)} seed(s) ({each}; [layer-students-cpu.md](layer-students-cpu.md)), {mean / teacher:.1%} "
            f"of the teacher's {teacher:.2f}: {_met(len(seeds) >= 3 and mean >= 0.97 * teacher)}."
        )
    int8 = rows.get("l3-onnx-int8")
    if int8 is not None and int8["sts"]["avg"] is not None:
        speed, gap = int8["speed_vs_teacher"], int8["sts"]["avg"] - teacher
        lines.append(
            f"- The 3-layer student's int8 export runs at >= 5x the teacher's PyTorch speed within 3 points: {speed:.2f}x, "
            f"{int8['sts']['avg']:.2f} ({gap:+.2f} points) in this run: {_met(speed >= 5 and gap >= -3)}."
        )
    return lines


def search_lines(search: list[dict[str, Any]]) -> list[str]:
    lines = []
    for row in search:
        if not row["index"].startswith("binary"):
            continue
        ok = (
            row["recall_at_10"] >= 0.95 and row["memory_fraction"] <= 1 / 16 and row["x_exact_one_query"] >= 1
        )
        lines.append(
            f"- Binary search on the real {row['n']:,} offline sentences: recall@10 >= 0.95 after rescoring, in <= "
            f"1/16 of the float index's memory, at >= the exact one-query QPS: {row['index']}: "
            f"{row['recall_at_10']:.4f}, 1/{1 / row['memory_fraction']:.1f} of the memory, "
            f"{row['x_exact_one_query']:.1f}x the exact one-query QPS: {_met(ok)}."
        )
    return lines


def serve_line(service: dict[str, Any]) -> list[str]:
    ratio, errors = service["ratio_median"], service["errors"]
    load = service["loadavg_start"]
    quiet = bool(load) and load[0] <= 1.5
    verdict = (
        _met(ratio >= 0.85 and errors == 0 and service["clients"] == 16)
        if quiet
        else "not measured on a quiet machine"
    )
    return [
        f"- `sentcl serve` holds >= 0.85x the in-process encode at 16 clients with zero errors, on a quiet machine: "
        f"{ratio:.2f}x at {service['clients']} clients, {errors} errors, load average at the start "
        f"{', '.join(f'{x:.1f}' for x in load)}: {verdict}."
    ]


def targets(run: dict[str, Any], root: Path, peers_verdict: str) -> str:
    """The targets section's bullet lines."""
    rows = run["points"]
    teacher = rows["teacher"]["sts"]["avg"]
    lines = [*static_lines(rows, teacher, root), *layer_lines(rows, teacher, root)]
    lines += search_lines(run.get("search", []))
    lines.append(f"- On the chart, no peer point lies above sentcl's frontier: {peers_verdict}.")
    if "service" in run:
        lines += serve_line(run["service"])
    return "\n".join(lines)
