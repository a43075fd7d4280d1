"""docs/results/frontier-cpu.md and its plot, rebuilt from the committed runs of ``bench.frontier``.

The page shows the newest run under bench/results/frontier/ (by its ``started`` time): one table of every point
(STS average, sentences/s, speed against the teacher in the same rounds, size) and a Pareto plot of STS
average against that speed (log x; its axis also gives the teacher's sentences/s). sentcl's frontier is the
set of its points that no other sentcl point beats on both axes; a peer above it is named on the page. Nothing here measures: the page is a function of
the committed summaries (tests/bench/test_frontier_page.py rebuilds it and compares).

    python -m bench.frontier_page          # from the repository root
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.frontier_static import peers_note, settled_note, static_section
from bench.harness import ROOT
from sentcl.report.pareto import pareto

RUNS = Path("bench/results/frontier")
BUILDS = Path(
    "bench/results/frontier_static_builds.json"
)  # how the --static students were made, and their time
PAGE = Path("docs/results/frontier-cpu.md")
PLOT_NAME = "frontier-cpu.png"


def newest_run(root: Path = ROOT) -> tuple[Path, dict[str, Any]]:
    """The committed run with the latest ``started`` time, and its path relative to ``root``."""
    runs = [(p, json.loads(p.read_text(encoding="utf-8"))) for p in sorted((root / RUNS).glob("*.json"))]
    if not runs:
        raise FileNotFoundError(f"no frontier run under {root / RUNS}: run python -m bench.frontier first")
    path, run = max(runs, key=lambda pr: pr[1]["started"])
    return path.relative_to(root), run


def scored(run: dict[str, Any], family: str | None = None) -> list[tuple[str, float, float]]:
    """(name, speed, STS average) of the run's points that have an average (of one family). The speed is the
    median of the point's per-round ratios to the teacher (``speed_vs_teacher``), what the page compares: the
    median sentences/s of two points come from different rounds, so on a shared machine they can rank two
    points the other way round."""
    return [
        (name, row["speed_vs_teacher"], row["sts"]["avg"])
        for name, row in run["points"].items()
        if row["sts"]["avg"] is not None and (family is None or row["family"] == family)
    ]


def above_frontier(run: dict[str, Any]) -> list[str]:
    """Peers that no sentcl point matches: none at least as fast with at least the same average."""
    ours = scored(run, "sentcl")
    return [
        name
        for name, speed, quality in scored(run, "peer")
        if not any(s >= speed and q >= quality for _, s, q in ours)
    ]


def why_above(run: dict[str, Any], name: str) -> str:
    """Why a peer lies above sentcl's frontier, from the run's own figures."""
    rows = run["points"]
    row = rows[name]
    if row["runtime"] == "openvino" and "teacher-onnx" in rows:
        return (
            f"{name} runs the teacher's own graph (mean cosine {row['cos_to_teacher']['mean']:.5f} to the "
            f"teacher's vectors) at {row['speed_vs_teacher']:.2f}x the teacher, where onnxruntime runs sentcl's "
            f"export at {rows['teacher-onnx']['speed_vs_teacher']:.2f}x in the same rounds"
            + (
                ""
                if any(r["runtime"] == "openvino" and r["family"] == "sentcl" for r in rows.values())
                else "; this run has no sentcl OpenVINO point"
            )
        )
    if row["runtime"] == "model2vec" and not any(r["runtime"] == "static" for r in rows.values()):
        return f"{name} is a static model (one vector per token); this run has no sentcl static student"
    faster = [(n, v, q) for n, v, q in scored(run, "sentcl") if v >= row["speed_vs_teacher"]]
    if faster:  # the best sentcl point at least as fast: how far below it lies
        best, speed, quality = max(faster, key=lambda p: p[2])
        return (
            f"{name} ({row['sts']['avg']:.2f}) scores {row['sts']['avg'] - quality:.2f} points above the best "
            f"sentcl point at least as fast, {best} ({quality:.2f}, at {speed / row['speed_vs_teacher']:.1f}x "
            f"{name}'s speed)"
        )
    return f"no sentcl point of this run is as fast as {name}"


def sts_source(row: dict[str, Any]) -> str:
    """Where a row's average came from; for the teacher's weights run elsewhere, the cosine that shows it."""
    cos = row.get("cos_to_teacher")
    if cos is None or row["sts"]["source"].startswith("measured"):
        return row["sts"]["source"]
    return f"{row['sts']['source']}; same weights: mean cosine {cos['mean']:.5f} to the teacher's vectors"


def table(run: dict[str, Any]) -> str:
    teacher = run["points"]["teacher"]["sts"]["avg"]
    lines = [
        "| point | family | runtime | STS avg. (7 tasks) | of the teacher | sentences/s | speed vs teacher | "
        "CPU s per s | folder MiB | STS from |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, row in run["points"].items():
        avg = row["sts"]["avg"]
        kept = "-" if avg is None or teacher is None else f"{avg / teacher:.1%}"
        lines.append(
            f"| {name} | {row['family']} | {row['runtime']} | {'-' if avg is None else f'{avg:.2f}'} | {kept} | "
            f"{row['sentences_per_s']:,.0f} | {row['speed_vs_teacher']:.2f}x | {row['cpu_per_wall']:.2f} | "
            f"{row['size']['bytes'] / 2**20:.1f} | {sts_source(row)} |"
        )
    return "\n".join(lines)


def caption(run: dict[str, Any]) -> str:
    """The model, the data and the machine of a run, for its figure."""
    machine, config = run["machine"], run["config"]
    return (
        f"teacher {config['teacher']}; {run['sentences']} distinct STS-B test sentences, batch {config['batch_size']}; "
        f"{machine['cpu']}, {config['threads']} thread; system load {machine['loadavg_start'][0]:.1f} at the start"
    )


def figure(run: dict[str, Any]) -> Any:
    """STS average against the speed ratio to the teacher (log x; the ratio is what the page compares): sentcl
    filled, peers hollow, sentcl's frontier a line; labels placed where they overlap nothing, the break of the
    STS axis marked, the model, data and machine in the caption."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sentcl.report.figure_rules import add_caption, mark_axis_break, place_labels

    fig, ax = plt.subplots(figsize=(8, 5.4), dpi=100)
    for family, style in (("sentcl", {"color": "C0"}), ("peer", {"facecolors": "none", "edgecolors": "C3"})):
        pts = scored(run, family)
        ax.scatter([p[1] for p in pts], [p[2] for p in pts], s=40, label=family, **style)
    line = pareto(scored(run, "sentcl"))
    rows = run["points"]
    xs = [rows[n]["speed_vs_teacher"] for n in line]
    ax.plot(xs, [rows[n]["sts"]["avg"] for n in line], color="C0", linewidth=1, label="sentcl frontier")
    ax.set_xscale("log")
    teacher = rows["teacher"]["sentences_per_s"] if "teacher" in rows else None
    per_s = f"; 1x = {teacher:,.0f} sentences/s" if teacher else ""
    ax.set_xlabel(f"speed against the teacher's PyTorch encode (x, log scale{per_s})")
    ax.set_ylabel("STS average, 7 tasks (Spearman × 100)")
    ax.set_title("The CPU frontier: quality against speed")
    ax.grid(True, which="both", alpha=0.3)
    ax.margins(x=0.12, y=0.12)
    ax.legend(loc="lower left")
    mark_axis_break(ax)
    add_caption(fig, caption(run))
    place_labels(ax, [(name, x, y) for name, x, y in sorted(scored(run), key=lambda p: (p[1], p[2]))])
    return fig


def plot(run: dict[str, Any], out: Path) -> None:
    """:func:`figure` saved as a PNG at ``out``."""
    import matplotlib.pyplot as plt

    fig = figure(run)
    fig.savefig(out, metadata={"Software": None})
    plt.close(fig)


def builds(root: Path, run: dict[str, Any]) -> str:
    """A line per static student of the run: the command that built it and its time (from BUILDS)."""
    file = root / BUILDS
    known = json.loads(file.read_text(encoding="utf-8")) if file.is_file() else {}
    lines = [
        f"- `{name}`: `{known[name]['command']}` ({known[name]['wall_s']:.0f} s wall, "
        f"{known[name]['cpu_s']:.0f} CPU-s, {known[name].get('threads', 'one thread')}, load average "
        f"{known[name]['load']}; {known[name]['stages']})"
        for name, row in run["points"].items()
        if row["runtime"] == "static" and name in known
    ]
    return (
        ("\n\nThe static students (from `" + BUILDS.as_posix() + "`):\n\n" + "\n".join(lines))
        if lines
        else ""
    )


def students_note(run: dict[str, Any]) -> str:
    """What the layer-student rows are: trained folders scored here, or cuts carrying committed averages."""
    rows = run["points"]
    trained = [n for n, r in rows.items() if r.get("trained_from")]
    cut = [n for n, r in rows.items() if r["runtime"] == "pytorch" and n != "teacher" and n not in trained]
    cut = [n for n in cut if rows[n]["family"] == "sentcl"]
    note = ""
    if trained:
        note += (
            " The layer students "
            + ", ".join(f"`{n}`" for n in trained)
            + " run from their trained folders (`"
            + "`, `".join(rows[n]["trained_from"] for n in trained)
            + "`; the int8 points are their exports) and are scored in this run."
        )
    if cut:
        note += (
            " The layer students "
            + ", ".join(f"`{n}`" for n in cut)
            + " are the teacher's layers cut in the run "
            "(their trained weights are not kept; a cut has the same shapes, so the same speed) and carry the "
            "trained students' committed averages."
        )
    return note


def side_sections(run: dict[str, Any], verdict: str, root: Path) -> str:
    """The search and service points (from their committed bench results) and the targets."""
    from bench.frontier_side import (
        SEARCH_RESULTS,
        SERVE_RESULTS,
        search_points,
        search_table,
        serve_point,
        serve_repeats,
        serve_table,
    )
    from bench.frontier_targets import targets

    search = search_points(root, list(SEARCH_RESULTS))
    service = [serve_point(root, path) for path in SERVE_RESULTS]
    text = (
        "\n\n## Search points\n\nCompressed indexes of the real offline sentences (the teacher's vectors), "
        "recall@10 against exact search, memory against the float index's, queries per second at one thread "
        "against the exact flat index's in the same bench run:\n\n" + search_table(search)
    )
    text += (
        "\n\n## The service\n\n`sentcl serve` (the teacher, 16 clients; the service's defaults with the machine otherwise idle, then on a loaded machine, then one thread a side) against the "
        "same model's in-process encode, alternating rounds:\n\n" + serve_table(service)
    )
    repeats = serve_repeats(root)
    text += f"\n\n{repeats}" if repeats else ""
    return (
        text + "\n\n## Targets\n\n" + targets({**run, "search": search, "service": service[0]}, root, verdict)
    )


def peer_batch(config: dict[str, Any]) -> str:
    """How the peers were batched, where the run set it apart from sentcl's points (older runs did not)."""
    size = config.get("peer_batch_size")
    if size is None or size == config["batch_size"]:
        return ""
    return " (the peers: each library's own default batch size)" if size == 0 else f" (the peers: {size})"


INT8_POINTS = {"teacher-onnx-int8": "teacher-onnx", "l3-onnx-int8": "l3", "l2-onnx-int8": "l2"}


def newest_per_cpu(root: Path = ROOT) -> list[tuple[Path, dict[str, Any]]]:
    """The newest committed run of each CPU model (by ``machine.cpu``), newest first."""
    runs = [(p, json.loads(p.read_text(encoding="utf-8"))) for p in sorted((root / RUNS).glob("*.json"))]
    newest: dict[str, tuple[Path, dict[str, Any]]] = {}
    for path, run in sorted(runs, key=lambda pr: pr[1]["started"]):
        newest[run["machine"]["cpu"]] = (path.relative_to(root), run)
    return sorted(newest.values(), key=lambda pr: pr[1]["started"], reverse=True)


def int8_by_cpu(root: Path = ROOT) -> str:
    """The int8 exports on each kind of CPU the committed runs measured (with VNNI or without): x the teacher,
    x their own fp32 point of the same run, STS."""
    runs = newest_per_cpu(root)
    if len(runs) < 2:
        return ""
    lines = [
        "| CPU (its int8 instructions) | point | STS avg. (7 tasks) | x teacher | x its fp32 point | run |",
        "|---|---|---:|---:|---:|---|",
    ]
    for path, run in runs:
        flags = run["machine"].get("cpu_flags", [])
        kind = "VNNI" if any("vnni" in f for f in flags) else "AVX2, no VNNI"
        rows = run["points"]
        for point, base in INT8_POINTS.items():
            if point in rows and base in rows:
                row, avg = rows[point], rows[point]["sts"]["avg"]
                lines.append(
                    f"| {run['machine']['cpu']} ({kind}) | {point} | {'-' if avg is None else f'{avg:.2f}'} | "
                    f"{row['speed_vs_teacher']:.2f}x | "
                    f"{row['speed_vs_teacher'] / rows[base]['speed_vs_teacher']:.2f}x | `{path.name}` |"
                )
    return (
        "\n\n## int8 on both kinds of CPU\n\nThe int8 exports choose their kernel by the CPU's features "
        "([export](../guides/shrink-and-export.md)): with VNNI, onnxruntime's U8S8; without it, U8U8 with the "
        "feed-forward outputs in fp32, so that every sentence keeps a cosine of at least 0.99 to fp32. The "
        "newest committed run on each kind of CPU, each point against the teacher's PyTorch encode and against "
        "its own fp32 point of the same run (`x teacher` of each divided):\n\n" + "\n".join(lines)
    )


def _avg(run: dict[str, Any], name: str) -> float | None:
    return run["points"][name]["sts"]["avg"] if name in run["points"] else None


def page(path: Path, run: dict[str, Any], built: str = "", root: Path = ROOT) -> str:
    machine = run["machine"]
    load = ", ".join(f"{x:.1f}" for x in machine.get("loadavg_start", []))
    ours = pareto(scored(run, "sentcl"))
    above = above_frontier(run)
    verdict = "".join(f"\n- Above sentcl's frontier: {why_above(run, name)}." for name in above)
    verdict = f"\n{verdict}" if verdict else " No peer point lies above sentcl's frontier."
    short = "none lies above it" if not above else "above it: " + ", ".join(above) + " (see above)"
    return f"""# The CPU frontier: quality against speed, one thread

Every point encodes the same {run["sentences"]} distinct STS-B test sentences, batch
{run["config"]["batch_size"]}{peer_batch(run["config"])}, max length {run["config"]["max_length"]}, one thread, in one run of
`bench/frontier.py`; the points alternate round by round ({run["config"]["rounds"]} rounds, rotating who goes
first) and each timing repeats until {run["config"]["min_seconds"]} s have passed. The machine ({machine["cpu"]},
{machine["logical_cores"]} cores) is shared with other jobs (load average at the start {load}), so absolute
rates move between runs: **the speed column is the median of each point's ratio to the teacher's PyTorch rate
in the same round**, which is what compares. STS is the seven-task average (STS12-16, STS-B test, SICK-R test;
Spearman x 100) by `sentcl eval`'s path; where a point's model was already scored the committed figure is
reused, as the last column says.{students_note(run)} "CPU s per s" is the CPU time the point's process used per
second of its timing: about the share of one core it got (never above one: one thread each).

{table(run)}

sentcl's frontier (no sentcl point faster and better): {", ".join(ours)}.{verdict}{settled_note(run, root)}{built}{peers_note(run)}{int8_by_cpu(root)}

![STS average against speed]({PLOT_NAME})

```bash
{run["command"]}
```

(From `{path.as_posix()}`; `python -m bench.frontier_page` rebuilds this page and the plot.){static_section(root, run["config"]["batch_size"], _avg(run, "model2vec"))}{side_sections(run, short, root)}
"""


def build(root: Path = ROOT, plot_to: Path | None = None) -> str:
    """The page's text from the newest committed run; the plot written to ``plot_to`` when given."""
    path, run = newest_run(root)
    if plot_to is not None:
        plot(run, plot_to)
    return page(path, run, builds(root, run), root)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    text = build(ROOT, ROOT / PAGE.parent / PLOT_NAME)
    (ROOT / PAGE).write_text(text, encoding="utf-8")
    print("wrote", PAGE, "and", PAGE.parent / PLOT_NAME)


if __name__ == "__main__":
    main()
