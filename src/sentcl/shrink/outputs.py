"""The measured half of a shrink run and what it writes: scores, speeds, the Pareto table and plot, the model.

- ``eval-NAME`` steps: the teacher's and each candidate's score on the evaluation data; ``kept`` is the
  candidate's score over the teacher's.
- ``timing``: the teacher and every candidate in alternating rounds (``sentcl.evaluation.speed``) at the
  user's thread count, redone when any model or the thread count changed.
- ``OUTPUT/pareto.md`` and ``pareto.json`` (every model: speed, score, share kept, size, Pareto set),
  ``pareto.png``, ``OUTPUT/model/`` (the chosen candidate's folder, whole, with its card as README.md: ready
  for ``sentcl serve`` and ``sentcl index``), ``shrink.json`` (the run's record), each written atomically.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sentcl.files.atomic import atomic_write_json, atomic_write_text
from sentcl.files.fingerprint import json_digest
from sentcl.report.pareto import pareto
from sentcl.shrink.build import Context, copy_model

MODEL = "model"
CARD = "README.md"


def models(ctx: Context) -> dict[str, str]:
    """Name -> folder of the teacher and every built candidate."""
    return {"teacher": ctx.teacher, **{n: r["folder"] for n, r in ctx.built.items()}}


def model_keys(ctx: Context) -> dict[str, str]:
    return {"teacher": ctx.teacher_digest, **{n: r["digest"] for n, r in ctx.built.items()}}


def evaluate_all(ctx: Context, teacher: Any, scorer: Any, data_digest: str) -> dict[str, dict[str, Any]]:
    """Each model's score (a step each)."""
    from sentcl.modeling.open import open_model

    out = {}
    for name, folder in models(ctx).items():
        digest = model_keys(ctx)[name]

        def work(name: str = name, folder: str = folder) -> dict[str, Any]:
            return scorer(teacher if name == "teacher" else open_model(folder))

        out[name] = ctx.steps.run(f"eval-{name}", {"model": digest, "data": data_digest}, work)
    return out


def time_all(ctx: Context, teacher: Any, sentences: list[str], threads: int) -> dict[str, dict[str, Any]]:
    """Every model's speed, timed together (one step)."""
    from sentcl.evaluation.speed import alternate_rounds, speed_rows, timed
    from sentcl.modeling.open import open_model

    b = ctx.budget
    inputs = {
        "models": model_keys(ctx),
        "threads": threads,
        "rounds": b.rounds,
        "texts": json_digest(sentences),
    }
    inputs["min_seconds"] = b.min_seconds

    def work() -> dict[str, Any]:
        points = {}
        for name, folder in models(ctx).items():
            model = teacher if name == "teacher" else open_model(folder, threads=threads)
            points[name] = timed(lambda s, m=model: m.encode(s, normalize=True))
        rates, cpu, _ = alternate_rounds(points, sentences, b.rounds, b.min_seconds, ctx.steps.log)
        return {"rows": speed_rows(rates, cpu, "teacher"), "sentences": len(sentences)}

    return ctx.steps.run("timing", inputs, work)["rows"]


def folder_bytes(folder: str) -> int:
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


def machine() -> dict[str, Any]:
    from sentcl.training.provenance import cpu_model

    return {"cpu": cpu_model(), "logical_cores": os.cpu_count(), "python": platform.python_version()}


def table_rows(ctx: Context, scores: dict[str, Any], speeds: dict[str, Any]) -> dict[str, dict[str, Any]]:
    teacher_score = scores["teacher"]["score"]
    rows = {}
    for name, folder in models(ctx).items():
        score = scores[name]["score"]
        rows[name] = {
            "family": "teacher" if name == "teacher" else ctx.built[name].get("family", ""),
            "score": score,
            "kept": score / teacher_score if teacher_score else float("nan"),
            "details": scores[name]["details"],
            "sentences_per_s": speeds[name]["sentences_per_s"],
            "speed_vs_teacher": speeds[name]["speed_vs_teacher"],
            "round_ratios": speeds[name]["round_ratios"],
            "folder_mib": folder_bytes(folder) / 2**20,
            "folder": str(folder),
        }
    return rows


def markdown(rows: dict[str, dict[str, Any]], front: list[str], headline: str, chosen: str) -> str:
    lines = [
        *front,
        "",
        f"| model | {headline} | of the teacher | sentences/s | speed vs teacher | folder MiB | Pareto |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for name, r in rows.items():
        mark = " (chosen)" if name == chosen else ""
        lines.append(
            f"| {name}{mark} | {r['score']:.4g} | {r['kept']:.1%} | {r['sentences_per_s']:,.0f} | "
            f"{r['speed_vs_teacher']:.2f}x | {r['folder_mib']:.1f} | {'yes' if r['pareto'] else ''} |"
        )
    return "\n".join(lines) + "\n"


def write_outputs(
    ctx: Context,
    opts: Any,
    record: dict[str, Any],
    scores: dict[str, Any],
    speeds: dict[str, Any],
    choose: Callable[..., tuple[str, bool, str]],
) -> dict[str, Any]:
    """The table, the plot, the chosen model with its card, and the run's record; the record."""
    from sentcl.report.plots import plot_pareto

    rows = table_rows(ctx, scores, speeds)
    front = set(pareto([(n, r["speed_vs_teacher"], r["kept"]) for n, r in rows.items()]))
    for name, row in rows.items():
        row["pareto"] = name in front
    chosen, met, sentence = choose(rows, opts.target, opts.threads)
    where = machine()
    headline = opts.evaluation.headline
    intro = [
        f"# sentcl shrink: {opts.teacher}",
        "",
        f"Target {opts.target.describe()}; evaluation {opts.evaluation.kind} {opts.evaluation.label} "
        f"({headline}); speeds at {opts.threads} thread(s) on {where['cpu']}, the median over "
        f"{ctx.budget.rounds} alternating round(s) of each model's ratio to the teacher's rate in the same round.",
        "",
        sentence,
    ]
    root = ctx.root
    atomic_write_text(root / "pareto.md", markdown(rows, intro, headline, chosen))
    atomic_write_json(
        root / "pareto.json", {"chosen": chosen, "met": met, "sentence": sentence, "rows": rows}, indent=2
    )
    title = f"{Path(opts.teacher).name} shrunk: {opts.evaluation.kind} {Path(opts.evaluation.label).name}"
    plot_pareto(
        {n: (r["speed_vs_teacher"], 100 * r["kept"]) for n, r in rows.items()},
        [n for n in rows if rows[n]["pareto"]],
        chosen,
        root / "pareto.png",
        xlabel=f"speed against the teacher's PyTorch encode (x; 1x = {rows['teacher']['sentences_per_s']:,.0f} "
        f"sentences/s), {opts.threads} thread(s), log scale",
        ylabel=f"{headline}, % of the teacher's",
        title=f"{title}\n{where['cpu']}",
        target=(
            opts.target.kind,
            opts.target.value if opts.target.kind == "speed" else 100 * opts.target.value,
        ),
    )
    card = model_card(chosen, rows, opts, sentence, where, ctx)
    model_dir = copy_model(Path(rows[chosen]["folder"]), root / MODEL, {CARD: card})
    record.update(machine=where, rows=rows, chosen=chosen, met=met, sentence=sentence, model=str(model_dir))
    record["steps"] = {"ran": ctx.steps.ran, "reused": ctx.steps.reused}
    atomic_write_json(root / "shrink.json", record, indent=2)
    return record


def model_card(
    chosen: str, rows: dict[str, Any], opts: Any, sentence: str, where: dict[str, Any], ctx: Context
) -> str:
    """The chosen model's card (README.md): what it is, its figures beside the teacher's, how to use it."""
    row = rows[chosen]
    built = ctx.built[chosen]
    how = {k: v for k, v in built.items() if k not in ("folder", "digest")}
    text = f"""---
tags: [sentence-embeddings, sentcl, sentcl-shrink]
base_model: {Path(opts.teacher).name}
---

# {chosen}: a smaller, faster {Path(opts.teacher).name}

Made by `sentcl shrink` from the teacher `{opts.teacher}` (target {opts.target.describe()}).

{sentence}

| | this model | teacher |
|---|---:|---:|
| {opts.evaluation.headline} on {opts.evaluation.kind} `{opts.evaluation.label}` | {row["score"]:.4g} | {rows["teacher"]["score"]:.4g} |
| sentences/s at {opts.threads} thread(s) | {row["sentences_per_s"]:,.0f} | {rows["teacher"]["sentences_per_s"]:,.0f} |
| speed against the teacher | {row["speed_vs_teacher"]:.2f}x | 1x |
| folder MiB | {row["folder_mib"]:.1f} | {rows["teacher"]["folder_mib"]:.1f} |

Measured on {where["cpu"]}. How it was built (the run's step record): `{json.dumps(how, default=str)}`.
Every candidate of the run is in its `pareto.md`.

## Use

    sentcl encode --model PATH --input sentences.txt --output vectors.npy
    sentcl serve --model PATH
    sentcl encode --model PATH --input corpus.txt --output shards --shard-size 100000
    sentcl index build --embeddings shards

or in Python: `from sentcl.modeling.open import open_model; open_model("PATH").encode(["a sentence"])`.
"""
    return text


__all__ = ["evaluate_all", "time_all", "write_outputs"]
