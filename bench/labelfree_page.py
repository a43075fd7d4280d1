"""docs/results/labelfree-cpu.md and its plot, rebuilt from bench/results/labelfree_correlation.json.

Nothing here measures: the page is a function of the committed summary of ``bench.labelfree_correlation``
(tests/bench/test_labelfree_page.py rebuilds it and compares). A measure "predicts" quality when its Spearman
rank correlation with the seven-task STS average, signed by the measure's better direction
(``sentcl.config.unlabelled.UNLABELLED_MEASURES``), is at least 0.7; the best such figure names the default
of ``eval.unlabelled_measure``.

    python -m bench.labelfree_page          # from the repository root
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.harness import ROOT
from sentcl.config.unlabelled import UNLABELLED_MEASURES
from sentcl.evaluation.labelfree.report import PAPERS

SUMMARY = Path("bench/results/labelfree_correlation.json")
PAGE = Path("docs/results/labelfree-cpu.md")
PLOT_NAME = "labelfree-cpu.png"
TARGET = 0.7
UNITS = {
    "alignment_dropout": "mean squared distance of unit vectors",
    "alignment_deletion": "mean squared distance of unit vectors",
    "uniformity": "log mean Gaussian potential, t = 2",
    "rankme": "effective number of dimensions",
    "anisotropy": "mean cosine of random pairs",
    "self_retrieval_at_1": "share of sentences",
}


def signed(summary: dict[str, Any], name: str) -> float:
    """Spearman ρ with the STS average, positive when the measure's better direction goes with higher STS."""
    rho = summary["spearman_with_sts_avg"][name]["spearman"]
    return rho if UNLABELLED_MEASURES[name] == "higher" else -rho


def best_measure(summary: dict[str, Any]) -> str:
    return max(UNLABELLED_MEASURES, key=lambda name: signed(summary, name))


def verdict(value: float) -> str:
    if value >= TARGET:
        return "predicts quality"
    if value >= 0.4:
        return "weak"
    if value > -0.4:
        return "does not predict"
    return "predicts the wrong way"


def correlations(summary: dict[str, Any]) -> str:
    rows = [
        "| Measure | Better | Spearman ρ with STS avg | ρ in the better direction | p | n | Verdict | Paper |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    for name in sorted(UNLABELLED_MEASURES, key=lambda n: -signed(summary, n)):
        s = summary["spearman_with_sts_avg"][name]
        rows.append(
            f"| `{name}` | {UNLABELLED_MEASURES[name]} | {s['spearman']:+.3f} | {signed(summary, name):+.3f} | "
            f"{s['p_value']:.2g} | {s['n']} | {verdict(signed(summary, name))} | {PAPERS[name]} |"
        )
    return "\n".join(rows)


def points_table(summary: dict[str, Any]) -> str:
    names = list(UNLABELLED_MEASURES)
    rows = [
        "| Model | Dim | STS avg | " + " | ".join(f"`{n}`" for n in names) + " |",
        "|---|---:|---:|" + "---:|" * len(names),
    ]
    for p in sorted(summary["points"], key=lambda p: -p["sts_avg"]):
        cells = ["n/a" if p["measures"][n] is None else f"{p['measures'][n]:.4g}" for n in names]
        rows.append(f"| {p['model']} | {p['dim']} | {p['sts_avg']:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def plot(summary: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(UNLABELLED_MEASURES)
    fig, axes = plt.subplots(2, 3, figsize=(13, 7.5))
    for ax, name in zip(axes.flat, names, strict=True):
        pts = [(p["measures"][name], p["sts_avg"], p["model"]) for p in summary["points"]]
        pts = [q for q in pts if q[0] is not None]
        ax.scatter([q[0] for q in pts], [q[1] for q in pts], s=18)
        ax.set_xlabel(f"{name} ({UNITS[name]})", fontsize=8)
        ax.set_ylabel("seven-task STS avg (Spearman x 100)", fontsize=8)
        ax.set_title(f"{name}: ρ = {summary['spearman_with_sts_avg'][name]['spearman']:+.2f}", fontsize=10)
        ax.grid(alpha=0.3)
    corpus = summary["corpus"]
    fig.suptitle(
        f"Label-free measures on {corpus['distinct_sentences']:,} lines of {corpus['file']} (seed {corpus['seed']}) "
        f"against STS, {len(summary['points'])} encoders (all-MiniLM-L6-v2 variants, random BERTs); "
        f"CPU: {summary['machine']['cpu']}, 1 thread",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(out, metadata={"Software": None}, dpi=90)
    plt.close(fig)


def page(summary: dict[str, Any]) -> str:
    best = best_measure(summary)
    reach = [n for n in UNLABELLED_MEASURES if signed(summary, n) >= TARGET]
    corpus = summary["corpus"]
    predicts = ", ".join(f"`{n}`" for n in reach) or "none"
    not_predict = ", ".join(f"`{n}`" for n in UNLABELLED_MEASURES if n not in reach)
    return f"""# Do label-free measures predict quality? (cpu)

Each label-free measure of `sentcl eval --unlabelled` against the seven-task STS average (STS12-16, STS-B,
SICK-R test; SentEval's protocol, Spearman x 100), over {len(summary["points"])} encoders. The measures run
on a seeded reservoir sample (seed {corpus["seed"]}) of {corpus["sample_size"]:,} lines of
`{corpus["file"]}` ({corpus["distinct_sentences"]:,} distinct), text that is not the STS sentences.

```bash
python -m bench.labelfree_correlation --output bench/results/labelfree_correlation.json
python -m bench.labelfree_page
```

Summary: `{SUMMARY}` ({summary["seconds"]:,.0f} s on one thread, {summary["machine"]["cpu"]}; sentcl's own
encoding and the bench's agree to {summary["avg_L6_matches_sentcl_max_abs_diff"]:.1e}).

## The answer

- **Predict quality** (rank correlation ≥ {TARGET} in the measure's better direction): {predicts}.
- **Do not** reach it: {not_predict}.
- The best predictor, `{best}` (ρ in its better direction {signed(summary, best):+.3f}), is the default of
  `eval.unlabelled_measure`, the measure that picks `best/` from `eval.unlabelled_file` when there is no dev set.

{correlations(summary)}

Alignment alone ranks the models the wrong way, as Wang and Isola warn: a collapsed encoder (MiniLM's [CLS]
vector after 3 layers, a random BERT) puts every sentence in nearly the same place, so any two views of a
sentence are close too: their alignment is the best of all while their STS is the worst. Alignment is only
read beside uniformity. RankMe and self-retrieval separate collapsed encoders from the rest but do not order
the good ones.

"ρ in the better direction" is ρ for a measure where higher is better and −ρ where lower is better: positive
means the measure ranks the models the way the paper says it should. A correlation over these
{len(summary["points"])} encoders says how well a measure ranks *different models and read-outs* of one
architecture family; it is our reading that the same ranking holds between checkpoints of one run, where the
differences are smaller.

## The models

All come from one forward pass per backbone (see the bench's docstring): all-MiniLM-L6-v2 read with four poolers
and with its first L layers only (a layer-dropped copy), its mean-pooled vector post-processed (whitening,
PCA, the first k coordinates; fitted on the corpus sample, the user's text), and random-initialised BERTs
(seed 0) with MiniLM's tokenizer. Trained checkpoints (e.g. unsupervised SimCSE at several step counts) are
not among them: each costs a training run and a full STS encoding, more than this CPU budget held.

{points_table(summary)}

![label-free measures against the STS average]({PLOT_NAME})
"""


def build(root: Path = ROOT, plot_to: Path | None = None) -> str:
    summary = json.loads((root / SUMMARY).read_text(encoding="utf-8"))
    if plot_to is not None:
        plot(summary, plot_to)
    return page(summary)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    text = build(ROOT, ROOT / PAGE.parent / PLOT_NAME)
    (ROOT / PAGE).write_text(text, encoding="utf-8")
    print(f"wrote {PAGE} and {PAGE.parent / PLOT_NAME}")


if __name__ == "__main__":
    main()
