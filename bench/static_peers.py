"""The static peers built in one run: Model2Vec's ``distill`` and tokenlearn's training, same teacher, same corpus.

Tokenlearn (Model2Vec's own training step) is the fair peer of a trained static student: it fits a Model2Vec
table to a teacher's vectors of a corpus, where ``distill`` alone only passes each token through the teacher. This
file runs under the peers' interpreter (``make bench-static-peer-venv``: model2vec, tokenlearn; standard library, numpy
and those packages only, no sentcl) and builds, one after the other in one process at one thread (``--threads``; ``--builds`` picks some of them):

1. ``model2vec``: ``model2vec.distill.distill(TEACHER)`` with every default (256-d PCA, SIF 1e-4, float16);
2. tokenlearn's features: ``tokenlearn.featurize.featurize`` over the lines of ``--corpus`` (the teacher's token
   outputs of each sentence, the first and last token left out, averaged: tokenlearn's own target), batch 32;
3. ``tokenlearn``: what ``python -m tokenlearn.train`` does with its defaults: a vocabulary of the corpus' words
   (``create_vocab``, up to 56,000), ``distill`` with it in float32 at 256-d, ``train_model`` (256-d PCA of the
   targets, tokenlearn's own loop and early stopping); and ``tokenlearn-no-vocab``, the same without the added
   words (``--vocab-size 0``), which tells what the vocabulary is worth.

Without ``--corpus`` only step 1 runs (an older Model2Vec's distill, in an interpreter that has no tokenlearn).
Each folder goes under ``--output-dir``, and ``peers.json`` there records each step's wall and CPU seconds and
every package's version (``--append-to FILE``: also added to FILE's list of builds, bench/results/static_peers.json). ``bench.static_speed --model2vec NAME=FOLDER`` times and scores the folders.

    python -m bench.static_corpus --sentences 10000 --output CORPUS.txt
    .venv-static-peer/bin/python bench/static_peers.py --teacher TEACHER_DIR --corpus CORPUS.txt --output-dir DIR
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

FITTED_ON = "fitted_on.json"
BUILDS = ("model2vec", "tokenlearn", "tokenlearn-no-vocab")
PACKAGES = (
    "model2vec",
    "tokenlearn",
    "sentence-transformers",
    "transformers",
    "tokenizers",
    "torch",
    "skeletoken",
)


def timed(step: str, log: dict[str, Any], fn: Any, *args: Any, **kwargs: Any) -> Any:
    start, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    log[step] = {"wall_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}
    print(f"{step}: {log[step]}", file=sys.stderr, flush=True)
    return out


def fitted_on(folder: Path, sentences: int | None) -> None:
    """``FITTED_ON`` in a built folder: how many corpus sentences its model was fitted to (None: no corpus), which
    ``bench.static_speed`` records beside the point (Model2Vec's loader ignores the file)."""
    record = {"corpus_sentences": sentences}
    (folder / FITTED_ON).write_text(json.dumps(record) + "\n", encoding="utf-8")


def build(teacher: str, corpus: Path | None, out: Path, builds: set[str], threads: int) -> dict[str, Any]:
    import torch
    from model2vec.distill import distill

    torch.set_num_threads(threads)
    log: dict[str, Any] = {}
    if "model2vec" in builds:
        timed("model2vec_distill", log, distill, teacher).save_pretrained(str(out / "model2vec"))
        fitted_on(out / "model2vec", None)
    if corpus is None or not builds & {"tokenlearn", "tokenlearn-no-vocab"}:
        return log
    from sentence_transformers import SentenceTransformer
    from tokenlearn.featurize import featurize
    from tokenlearn.train import train_model
    from tokenlearn.utils import collect_means_and_texts, create_vocab

    lines = [line for line in corpus.read_text(encoding="utf-8").split("\n") if line]
    st = SentenceTransformer(teacher, device="cpu")
    rows = ({"text": line} for line in lines)
    timed("tokenlearn_featurize", log, featurize, rows, st, str(out / "features"), len(lines) + 1, 32, "text")
    texts, vectors = collect_means_and_texts(sorted((out / "features").glob("*.json")))
    for name, size in (("tokenlearn", 56_000), ("tokenlearn-no-vocab", 0)):
        if name not in builds:
            continue
        vocab = timed(f"{name}_vocab", log, create_vocab, texts, size) if size else None
        base = timed(f"{name}_distill", log, distill, teacher, vocabulary=vocab, quantize_to="float32")
        model = timed(f"{name}_train", log, train_model, base, texts, vectors, "cpu", 256)
        model.save_pretrained(str(out / name))
        fitted_on(out / name, len(lines))
        log[f"{name}_added_words"] = len(vocab) if vocab else 0
    return log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teacher", required=True, help="the teacher's sentence-transformers folder")
    parser.add_argument("--corpus", type=Path, help="one sentence a line (none: Model2Vec's distill alone)")
    parser.add_argument("--output-dir", required=True, type=Path)
    parser.add_argument("--append-to", type=Path, help="a summary JSON whose builds list this build joins")
    parser.add_argument(
        "--builds", default=",".join(BUILDS), help=f"which of {', '.join(BUILDS)} (default: all)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads of every step (default 1)")
    args = parser.parse_args()
    builds = set(args.builds.split(","))
    if builds - set(BUILDS):
        parser.error(
            f"--builds: unknown {', '.join(sorted(builds - set(BUILDS)))}; valid: {', '.join(BUILDS)}"
        )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args.output_dir.mkdir(parents=True, exist_ok=True)
    log = build(args.teacher, args.corpus, args.output_dir, builds, args.threads)
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    result = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "teacher": args.teacher,
        "corpus": None
        if args.corpus is None
        else {
            "file": str(args.corpus),
            "sentences": len(args.corpus.read_text(encoding="utf-8").splitlines()),
        },
        "threads": args.threads,
        "builds": sorted(builds),
        "steps": log,
        "versions": versions,
    }
    (args.output_dir / "peers.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if args.append_to:  # the committed summary of every build: this one added, an earlier one of DIR replaced
        known = json.loads(args.append_to.read_text(encoding="utf-8")) if args.append_to.is_file() else {}
        builds = [b for b in known.get("builds", []) if b["command"] != result["command"]]
        partial = args.append_to.with_name(args.append_to.name + ".partial")
        partial.write_text(json.dumps({"builds": [*builds, result]}, indent=2) + "\n", encoding="utf-8")
        partial.replace(args.append_to)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
