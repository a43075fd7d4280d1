"""Does training on a domain's own unlabelled text make all-MiniLM-L6-v2 better for that domain? A resumable run.

For each domain of :mod:`bench.adaptation_domains` (unlabelled training text, a labelled test of the same
domain) the start model (all-MiniLM-L6-v2 with its own mean pooling) is scored as it is (zero-shot) and after
each method trained on the domain's text: unsupervised SimCSE, Contrastive Tension (in-batch), TSDAE, and TSDAE
then SimCSE (the step budget split in two). Every method gets the same budget, ``--steps`` x ``--batch-size``
sentences, with its paper's (or reference's) learning rate; no method sees a label, and no run evaluates on a
dev set while it trains (``training.eval_steps=0``: the last step's model is the result).

Cells run seed-major (every domain and method of the first seed, then the next seed), so a run stopped early
still holds whole seeds. Each cell writes ``bench/results/adaptation/<domain>/<method>-seed<k>.json`` (zero-shot:
``<domain>/zero-shot.json``): the score, the label-free measures (``sentcl eval --unlabelled``) on 500 sentences
of the domain's own text, the start model's score beside it, the settings, CPU seconds, versions
and ``key``, a hash of the settings and of the code (src/sentcl and the runner's bench files). A re-run skips a cell whose
file has the same key and redoes any other. Trained weights go to ``--work`` (outside the repository) and are
deleted after each cell. ``python -m bench.adaptation_page`` turns the summaries into
docs/results/adaptation-cpu.md.

    python -m bench.adaptation --measure 4                 # time 4 steps of each method (after 1 untimed)
    nohup python -m bench.adaptation --steps 32 --batch-size 16 > runs/adaptation.log 2>&1 &
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.adaptation_domains import DOMAINS
from bench.common import machine_info, set_threads
from bench.harness import ROOT

OUT = Path("bench/results/adaptation")
START = "all-MiniLM-L6-v2"
#: method -> (sentcl objective settings, learning rate): each paper's (or reference implementation's) own
METHODS: dict[str, tuple[list[str], float]] = {
    "unsup_simcse": (["objective.name=unsup_simcse", "objective.temperature=0.05"], 3e-5),
    "contrastive_tension": (["objective.name=contrastive_tension", "objective.scale=20.0"], 5e-5),
    "tsdae": (["objective.name=tsdae", "objective.deletion_ratio=0.6", "training.weight_decay=0.0"], 3e-5),
}
#: the benchmark's methods in order; "tsdae+simcse" is TSDAE for half the steps, then SimCSE for the other half
#: the bench files whose code makes a result (the page builder's and the step timer's do not)
RUNNER_FILES = ("adaptation.py", "adaptation_domains.py", "common.py", "harness.py")
ORDER = ("zero-shot", "unsup_simcse", "contrastive_tension", "tsdae", "tsdae+simcse")
#: sentences of the domain's own (unlabelled) text each cell's label-free measures are taken on (seeded sample)
LABEL_FREE_SENTENCES = 500


def code_hash() -> str:
    """sha256 over src/sentcl's and the runner's files' contents: a result is fresh only for the code that made it."""
    digest = hashlib.sha256()
    files = sorted((ROOT / "src" / "sentcl").rglob("*.py")) + [ROOT / "bench" / f for f in RUNNER_FILES]
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def cell_key(settings: dict[str, Any], code: str) -> str:
    return hashlib.sha256(json.dumps({**settings, "code": code}, sort_keys=True).encode()).hexdigest()[:16]


def cell_path(out: Path, domain: str, method: str, seed: int | None) -> Path:
    name = "zero-shot.json" if method == "zero-shot" else f"{method}-seed{seed}.json"
    return out / domain / name


def done(path: Path, key: str) -> dict[str, Any] | None:
    """The cell's summary when it exists with this key (else None: the cell runs)."""
    if not path.is_file():
        return None
    summary = json.loads(path.read_text(encoding="utf-8"))
    return summary if summary.get("key") == key else None


def write_summary(path: Path, summary: dict[str, Any]) -> None:
    """Atomic: a stopped run leaves the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def train_overrides(method: str, start: str, corpus: Path, out_dir: Path, steps: int, args: argparse.Namespace,
                    seed: int) -> list[str]:  # fmt: skip
    objective, lr = METHODS[method]
    return [
        f"model.name_or_path={start}",
        f"model.max_length={args.max_length}",
        f"data.train_file={corpus}",
        *objective,
        f"training.output_dir={out_dir}",
        f"training.batch_size={args.batch_size}",
        f"training.learning_rate={lr}",
        f"training.max_steps={steps}",
        "training.epochs=1000",
        "training.warmup_steps=0",
        "training.eval_steps=0",
        "training.save_steps=0",
        "training.log_steps=10",
        "training.progress=false",
        f"training.num_threads={args.threads}",
        f"training.seed={seed}",
        "eval.final_tasks=[]",
        "eval.compare_with_start=false",
    ]


def train(method: str, start: str, corpus: Path, out_dir: Path, steps: int, args: argparse.Namespace,
          seed: int) -> Path:  # fmt: skip
    """Train ``method`` from ``start`` for ``steps`` steps; the saved model's folder."""
    import sentcl
    from sentcl.config import TrainConfig, load_config

    cfg = load_config(TrainConfig, None, train_overrides(method, start, corpus, out_dir, steps, args, seed))
    result = sentcl.train(cfg)
    return Path(result.output_dir) / "best"


def score(domain: str, model_path: str, data_dir: Path) -> tuple[dict[str, Any], dict[str, float | None]]:
    """The domain's labelled score, and the label-free measures on ``LABEL_FREE_SENTENCES`` of its own text."""
    import random

    from sentcl.evaluation.embedding import evaluation_encode_fn
    from sentcl.evaluation.labelfree.report import label_free, model_views
    from sentcl.modeling.open import load_encoder

    model = load_encoder(model_path)
    model.eval()
    result = DOMAINS[domain].score(evaluation_encode_fn(model), data_dir)
    text = sorted(set(DOMAINS[domain].sentences(data_dir)))
    sample = random.Random(0).sample(text, min(LABEL_FREE_SENTENCES, len(text)))
    return result, label_free(model_views(model, sample))["measures"]


def run_cell(domain: str, method: str, seed: int, args: argparse.Namespace, data_dir: Path) -> dict[str, Any]:
    """Train (unless zero-shot) and score one cell: its summary, without the key and the start's score."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    work = Path(args.work) / f"{domain}-{method}-seed{seed}"
    shutil.rmtree(work, ignore_errors=True)
    model_path = START
    if method != "zero-shot":
        corpus = Path(args.work) / f"{domain}.txt"
        if not corpus.is_file():
            corpus.parent.mkdir(parents=True, exist_ok=True)
            corpus.write_text("\n".join(DOMAINS[domain].sentences(data_dir)) + "\n", encoding="utf-8")
        if method == "tsdae+simcse":
            half = args.steps // 2
            first = train("tsdae", START, corpus, work / "tsdae", half, args, seed)
            model_path = str(
                train("unsup_simcse", str(first), corpus, work / "simcse", args.steps - half, args, seed)
            )
        else:
            model_path = str(train(method, START, corpus, work / method, args.steps, args, seed))
    train_cpu = time.process_time() - cpu0
    result, measures = score(domain, model_path, data_dir)
    shutil.rmtree(work, ignore_errors=True)
    return {
        "score": result["score"],
        "result": result,
        "label_free": {"sentences": LABEL_FREE_SENTENCES, "measures": measures},
        "cpu_seconds": time.process_time() - cpu0,
        "train_cpu_seconds": train_cpu if method != "zero-shot" else 0.0,
        "wall_seconds": time.perf_counter() - wall0,
    }


def settings_of(domain: str, method: str, seed: int | None, args: argparse.Namespace) -> dict[str, Any]:
    base = {"domain": domain, "method": method, "start": START, "split": DOMAINS[domain].split}
    if method == "zero-shot":
        return base
    parts = ["tsdae", "unsup_simcse"] if method == "tsdae+simcse" else [method]
    return {
        **base,
        "seed": seed,
        "steps": args.steps,
        "batch_size": args.batch_size,
        "max_length": args.max_length,
        "threads": args.threads,
        "stages": [{"method": m, "objective": METHODS[m][0], "learning_rate": METHODS[m][1]} for m in parts],
    }


def run(args: argparse.Namespace) -> None:
    from sentcl.files.paths import resolve_data_dir

    set_threads(args.threads)
    data_dir = resolve_data_dir(None)
    out, code, commit = ROOT / args.out, code_hash(), git_commit()
    domains = args.domains.split(",")
    methods = [m for m in ORDER if m in args.methods.split(",")]
    for seed in [int(s) for s in args.seeds.split(",")]:
        for domain in domains:
            zero = cell_path(out, domain, "zero-shot", None)
            zero_key = cell_key(settings_of(domain, "zero-shot", None, args), code)
            start = done(zero, zero_key)
            if start is None:
                start = {**run_cell(domain, "zero-shot", 0, args, data_dir), "key": zero_key}
                start |= {
                    "settings": settings_of(domain, "zero-shot", None, args),
                    "code": code,
                    "commit": commit,
                }
                start["machine"] = machine_info(args.threads)
                write_summary(zero, start)
                print(f"{domain} zero-shot: {start['score']:.2f}", flush=True)
            for method in methods:
                if method == "zero-shot":
                    continue
                path, settings = cell_path(out, domain, method, seed), settings_of(domain, method, seed, args)
                key = cell_key(settings, code)
                if done(path, key) is not None:
                    continue
                summary = run_cell(domain, method, seed, args, data_dir)
                summary |= {"start_score": start["score"], "key": key, "settings": settings, "code": code}
                summary |= {"commit": commit, "machine": machine_info(args.threads)}
                write_summary(path, summary)
                print(f"{domain} {method} seed {seed}: {summary['score']:.2f} (zero-shot {start['score']:.2f}; "
                      f"{summary['cpu_seconds']:.0f} CPU s)", flush=True)  # fmt: skip


def measure(args: argparse.Namespace) -> None:
    """Seconds per training step of each method on one thread (one untimed step first), on two domains' text."""
    from bench.adaptation_steps import time_steps

    set_threads(args.threads)
    payload = time_steps(args, list(METHODS), START, Path(args.work))
    path = ROOT / args.out / "step_times.json"
    write_summary(path, {**payload, "machine": machine_info(args.threads), "commit": git_commit()})
    print(json.dumps(payload["seconds_per_step"], indent=2))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=32, help="optimizer steps of every method (budget: x batch)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-length", type=int, default=32)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--domains", default=",".join(DOMAINS))
    p.add_argument("--methods", default=",".join(ORDER))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--work", default="/tmp/sentcl-adaptation", help="run folders and corpora (outside the repo)"
    )
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--measure", type=int, default=0, help="time this many steps of each method, then stop")
    args = p.parse_args(argv)
    measure(args) if args.measure else run(args)


if __name__ == "__main__":
    main()
