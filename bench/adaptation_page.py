"""docs/results/adaptation-cpu.md, rebuilt from the committed cells of ``bench.adaptation``.

Per domain: the zero-shot score of all-MiniLM-L6-v2 and each method's score, mean over the seeds done with the
seeds' spread (max - min) and every seed's value, the change against zero-shot, a verdict, and CPU seconds. The
verdict is judged against the three-seed spread: "helps" when the mean beats zero-shot by more than the spread,
"hurts" when it trails by more than the spread, "no clear change" otherwise; with fewer than three seeds done
the cell says how many and gives no verdict. Nothing here measures: the page is a function of the summaries
(tests/bench/test_adaptation_page.py rebuilds it from a fixture and compares the committed page with its rebuild).

"Can you tell without labels?": in each domain, every cell's label-free measures (taken on 500 sentences of the
domain's own text) are set beside its labelled score: the Spearman correlation across the domain's cells (each
measure signed so that higher is better), and which cell each measure would have chosen, with that cell's score
against the best and against zero-shot. A user with no labelled set chooses this way.

    python -m bench.adaptation_page          # from the repository root
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from scipy.stats import spearmanr

from bench.harness import ROOT
from sentcl.config.unlabelled import UNLABELLED_MEASURES

RUNS = Path("bench/results/adaptation")
PAGE = Path("docs/results/adaptation-cpu.md")
ORDER = ("zero-shot", "unsup_simcse", "contrastive_tension", "tsdae", "tsdae+simcse")
NAMES = {
    "zero-shot": "zero-shot (the start model)",
    "unsup_simcse": "unsupervised SimCSE",
    "contrastive_tension": "Contrastive Tension (in-batch)",
    "tsdae": "TSDAE",
    "tsdae+simcse": "TSDAE, then SimCSE",
}
SEEDS_WANTED = 3


def load(root: Path = ROOT) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """domain -> method -> the cells' summaries (seed order), from ``root / RUNS``."""
    cells: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for path in sorted((root / RUNS).glob("*/*.json")):
        summary = json.loads(path.read_text(encoding="utf-8"))
        settings = summary["settings"]
        cells.setdefault(settings["domain"], {}).setdefault(settings["method"], []).append(summary)
    for methods in cells.values():
        for summaries in methods.values():
            summaries.sort(key=lambda s: s["settings"].get("seed", 0))
    return cells


def verdict(scores: list[float], zero: float) -> str:
    """Against the seeds' spread (max - min); no verdict before SEEDS_WANTED seeds."""
    if len(scores) < SEEDS_WANTED:
        return f"{len(scores)} of {SEEDS_WANTED} seeds: not judged"
    mean, spread = statistics.fmean(scores), max(scores) - min(scores)
    if mean - zero > spread:
        return "helps"
    if zero - mean > spread:
        return "hurts"
    return "no clear change"


def domain_table(domain: str, methods: dict[str, list[dict[str, Any]]]) -> tuple[list[str], list[str]]:
    """The domain's table lines and the methods that help it."""
    zero = methods["zero-shot"][0]
    lines = [
        f"### {domain}",
        "",
        f"{zero['settings']['split']}. Score: {zero_metric(zero)}.",
        "",
        "| method | score: mean ± spread (seeds) | vs zero-shot | verdict | CPU s per run |",
        "|---|---:|---:|---|---:|",
        f"| {NAMES['zero-shot']} | {zero['score']:.2f} | | | {zero['cpu_seconds']:.0f} |",
    ]
    helping = []
    for method in ORDER[1:]:
        cells = methods.get(method, [])
        if not cells:
            lines.append(f"| {NAMES[method]} | not run yet | | | |")
            continue
        scores = [c["score"] for c in cells]
        mean, spread = statistics.fmean(scores), max(scores) - min(scores)
        each = ", ".join(f"{s:.2f}" for s in scores)
        judged = verdict(scores, zero["score"])
        if judged == "helps":
            helping.append(NAMES[method])
        cpu = statistics.fmean(c["cpu_seconds"] for c in cells)
        lines.append(
            f"| {NAMES[method]} | {mean:.2f} ± {spread:.2f} ({each}) | {mean - zero['score']:+.2f} | {judged} "
            f"| {cpu:.0f} |"
        )
    return lines, helping


def zero_metric(zero: dict[str, Any]) -> str:
    return "100 x Spearman" if "spearman" in zero["result"] else "accuracy %"


def budget_line(cells: dict[str, dict[str, list[dict[str, Any]]]]) -> str:
    trained = [c for methods in cells.values() for m, cs in methods.items() if m != "zero-shot" for c in cs]
    if not trained:
        return "No method has run yet."
    budgets = sorted({(c["settings"]["steps"], c["settings"]["batch_size"]) for c in trained})
    steps, batch = budgets[0]
    lengths = sorted({c["settings"]["max_length"] for c in trained})
    text = (
        f"Budget: {steps} steps x {batch} sentences = {steps * batch} sentences of the domain's text for every "
        f"method (TSDAE then SimCSE: {steps // 2} + {steps - steps // 2} steps), max length "
        f"{', '.join(map(str, lengths))}, one thread."
    )
    if len(budgets) > 1:
        text += f" Warning: the cells hold {len(budgets)} different budgets: {budgets}."
    every = [c for methods in cells.values() for cs in methods.values() for c in cs]
    codes = sorted({c.get("code", "unrecorded") for c in every})
    commits = sorted({c["commit"][:7] if "commit" in c else "unrecorded" for c in every})
    if len(codes) == 1:
        text += f" Every cell was made by the same code (hash {codes[0]}, commit {', '.join(commits)})."
    else:
        text += (
            f" Warning: the cells were made by {len(codes)} different versions of the code (commits "
            f"{', '.join(commits)}); rerun `python -m bench.adaptation` to redo the older ones."
        )
    return text


def overview(cells: dict[str, dict[str, list[dict[str, Any]]]], domains: list[str]) -> list[str]:
    """Methods x domains: the mean change against zero-shot and the verdict, one table."""
    lines = [
        "| method | " + " | ".join(domains) + " |",
        "|---|" + "---:|" * len(domains),
    ]
    for method in ORDER[1:]:
        row = []
        for domain in domains:
            done = cells[domain].get(method, [])
            if not done:
                row.append("")
                continue
            scores = [c["score"] for c in done]
            zero = cells[domain]["zero-shot"][0]["score"]
            judged = verdict(scores, zero)
            short = judged if len(scores) >= SEEDS_WANTED else f"{len(scores)}/{SEEDS_WANTED} seeds"
            row.append(f"{statistics.fmean(scores) - zero:+.2f} ({short})")
        lines.append(f"| {NAMES[method]} | " + " | ".join(row) + " |")
    return lines


def label_free_rows(methods: dict[str, list[dict[str, Any]]]) -> list[tuple[str, float, dict[str, float]]]:
    """(cell name, labelled score, measures signed higher-is-better) of every cell that recorded them."""
    rows = []
    for method in ORDER:
        for cell in methods.get(method, []):
            if "label_free" not in cell:
                continue
            name = (
                NAMES[method]
                if method == "zero-shot"
                else f"{NAMES[method]}, seed {cell['settings']['seed']}"
            )
            signed = {
                m: (v if UNLABELLED_MEASURES[m] == "higher" else -v)
                for m, v in cell["label_free"]["measures"].items()
                if v is not None and m in UNLABELLED_MEASURES
            }
            rows.append((name, cell["score"], signed))
    return rows


def label_free_section(cells: dict[str, dict[str, list[dict[str, Any]]]], domains: list[str]) -> list[str]:
    """Per domain and measure: Spearman with the labelled score across the cells, and the cell it would pick."""
    lines = [
        "## Can you tell without labels?",
        "",
        "Each cell's label-free measures (`sentcl eval --unlabelled`, on 500 sentences of the domain's own "
        "text) beside its labelled score. ρ: Spearman correlation across the domain's cells (zero-shot and every "
        "trained run), each measure signed so that higher is better. *picks*: the cell the measure ranks first, "
        "its labelled score, and that score against the domain's best cell and against zero-shot.",
        "",
    ]
    measures = list(UNLABELLED_MEASURES)
    for domain in domains:
        rows = label_free_rows(cells[domain])
        if len(rows) < 3 or "zero-shot" not in cells[domain]:
            lines += [f"- {domain}: {len(rows)} cells with label-free measures; too few to rank.", ""]
            continue
        zero, best = cells[domain]["zero-shot"][0]["score"], max(score for _, score, _ in rows)
        lines += [
            f"### {domain} ({len(rows)} cells)",
            "",
            "| measure | ρ with the score | picks | its score | vs best | vs zero-shot |",
            "|---|---:|---|---:|---:|---:|",
        ]
        for measure in measures:
            have = [(name, score, signed[measure]) for name, score, signed in rows if measure in signed]
            if len(have) < 3:
                continue
            rho = float(spearmanr([v for *_, v in have], [sc for _, sc, _ in have])[0])
            name, score, _ = max(have, key=lambda r: r[2])
            lines.append(
                f"| {measure} | {rho:+.2f} | {name} | {score:.2f} | {score - best:+.2f} | {score - zero:+.2f} |"
            )
        lines.append("")
    return lines


def build(root: Path = ROOT) -> str:
    cells = load(root)
    trained = [c for methods in cells.values() for m, cs in methods.items() if m != "zero-shot" for c in cs]
    total_cpu = sum(c["cpu_seconds"] for methods in cells.values() for cs in methods.values() for c in cs)
    lines = [
        "# Adaptation to a domain, without labels (CPU)",
        "",
        "Does training all-MiniLM-L6-v2 on a domain's own unlabelled text make it better for that domain? Each "
        "domain has unlabelled training text and a labelled test of the same domain; the start model (its own "
        "mean pooling) is scored as it is (zero-shot) and after each unsupervised method trained on the text. "
        "No method sees a label or a dev set; the last step's model is scored. Written by "
        "`python -m bench.adaptation_page` from the cells under `bench/results/adaptation/` "
        "(`python -m bench.adaptation` makes them; the settings, versions and CPU seconds are in each file).",
        "",
        budget_line(cells),
        "",
        "Verdicts are judged against the three seeds' spread (max - min): **helps** when the mean beats "
        "zero-shot by more than the spread, **hurts** when it trails by more than the spread, **no clear "
        "change** otherwise. Zero-shot is deterministic (one run).",
        "",
        f"Cells done: {len(trained)} trained runs and {len(cells)} zero-shot scores; {total_cpu / 60:.0f} min "
        "of CPU time in all.",
        "",
    ]
    domains = [d for d in sorted(cells) if "zero-shot" in cells[d]]
    lines += [
        "## At a glance",
        "",
        "Change of the mean score against zero-shot, per method and domain (points), with the verdict.",
        "",
        *overview(cells, domains),
        "",
        "## By domain",
        "",
    ]
    summary = []
    for domain in domains:
        table, helping = domain_table(domain, cells[domain])
        lines += [*table, ""]
        summary.append(f"- {domain}: {', '.join(helping) if helping else 'no method helps (yet)'}")
    lines += ["## Which method helps which domain", "", *summary, ""]
    lines += label_free_section(cells, domains)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    text = build(ROOT)
    (ROOT / PAGE).write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
