"""Which static student: the choices of the distill_static recipe, measured on the seven STS tasks.

The teacher's token vectors are computed once (``sentcl.methods.static_distill.token_vectors``); each variant
then builds its table (PCA to ``dim``, SIF weights with ``p(w)`` from Zipf's law over the vocabulary order or
from the corpus' token counts, SIF's ``a``) and, with ``steps`` > 0, fits it to the teacher's cached vectors of
the corpus (``sentcl.methods.static_fit``: cosine or MSE, an InfoNCE term at ``contrastive_weight``), at the
same budget for every loss. The corpus is the recipe's: the first 40,000 sentences of the offline English
corpus, whose teacher vectors the layer students share. One thread; STS by ``sentcl.evaluation.sts`` on the
table's mean of rows, unit length (what the folder's encode gives).

    python -m bench.static_students --output bench/results/static_students.json
    python -m bench.static_students --variants '{"weighting": "zipf"}' '{"steps": 600, "loss": "mse"}'
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sentcl.config.static_recipe import StaticRecipe, load_static_recipe
from sentcl.evaluation.sts import evaluate_sts
from sentcl.files.paths import resolve_data_dir
from sentcl.methods import static_distill as sd
from sentcl.methods.static_fit import fit_static
from sentcl.methods.static_student import corpus_sentences, teacher_matrix, token_lists
from sentcl.modeling.open import open_model
from sentcl.modeling.static import bag_mean
from sentcl.modeling.static_tokens import StaticTokenizer
from sentcl.postprocess.pca import fit_pca
from sentcl.similarity import unit_rows

VARIANTS = (
    {"weighting": "zipf", "a": 1e-4},  # Model2Vec's weighting (its sif_coefficient)
    {"weighting": "corpus", "a": 1e-4},
    {"weighting": "corpus", "a": 1e-3},
    {"weighting": "corpus", "a": 1e-3, "steps": 600},
    {"weighting": "corpus", "a": 1e-3, "steps": 600, "contrastive_weight": 1.0},
    {"weighting": "corpus", "a": 1e-3, "steps": 600, "loss": "mse"},
    {"weighting": "corpus", "a": 1e-3, "steps": 3000},
)
TABLE_KEYS = ("sentences", "dim", "pca_dim", "weighting", "a")  # the rest of a variant: FitSettings' fields


def _table(
    vectors: np.ndarray,
    ids: np.ndarray,
    vocab: int,
    spec: dict[str, Any],
    tokens: list[list[int]],
    recipe: StaticRecipe,
) -> Any:
    """The distilled table of a variant: PCA to ``pca_dim`` (default ``dim``), SIF weights (V, k)."""
    pca = fit_pca(vectors, spec.get("pca_dim", spec.get("dim", recipe.dim)))
    table = np.zeros((vocab, pca.components.shape[0]), np.float32)  # (V, k)
    table[ids] = pca.apply(vectors)  # (V', k)
    a = spec.get("a", recipe.sif_a)
    p = (
        sd.zipf_probabilities(vocab)
        if spec["weighting"] == "zipf"
        else sd.corpus_probabilities(tokens, vocab)
    )
    return table * sd.sif_weights(p, a)[:, None].astype(np.float32), pca


def reused_vectors(corpus: Path, shards: Path, sentences: list[str]) -> np.ndarray:
    """The teacher's vectors of ``sentences`` (N, D) from a sentcl shard folder of the same teacher over the
    lines of ``corpus``, matched by sentence (every sentence must be there)."""
    from sentcl.index.shards import ShardSet

    row = {line: i for i, line in enumerate(corpus.read_text(encoding="utf-8").split("\n"))}
    missing = [s for s in sentences if s not in row]
    if missing:
        raise SystemExit(f"{corpus}: {len(missing)} corpus sentences are missing, e.g. {missing[0]!r}")
    return ShardSet.open(shards).gather(np.array([row[s] for s in sentences]))  # (N, D)


def run(variants: list[dict[str, Any]], data: Path, args: argparse.Namespace) -> dict[str, Any]:
    torch.set_num_threads(1)
    recipe = load_static_recipe()  # what a variant leaves out is the built-in recipe's
    encoder = open_model(args.teacher)
    kept = sd.kept_tokens(encoder.tokenizer, recipe.skip_pattern)
    ids = np.flatnonzero(kept)
    start = time.process_time()
    vectors = sd.token_vectors(encoder, ids.tolist())  # (V', H)
    token_cpu = time.process_time() - start
    default_n = args.sentences or recipe.max_sentences
    most = max(v.get("sentences", default_n) for v in variants)
    sentences = corpus_sentences(data, most)
    tokens = token_lists(encoder, sentences)
    targets = (
        reused_vectors(Path(args.vectors[0]), Path(args.vectors[1]), sentences)
        if args.vectors
        else teacher_matrix(args.teacher, sentences, None)
    )  # (N, D)
    model = StaticTokenizer(encoder.tokenizer.backend_tokenizer)

    def encode(texts: list[str], table: np.ndarray) -> np.ndarray:
        return unit_rows(bag_mean(table, model.ids(texts)))

    result: dict[str, Any] = {
        "teacher": args.teacher,
        "corpus_sentences": len(sentences),
        "teacher_vectors": "reused by sentence: " + " ".join(args.vectors)
        if args.vectors
        else "teacher cache",
        "token_vectors_cpu_seconds": token_cpu,
        "rows": [],
    }
    for spec in variants:
        n = spec.get("sentences", default_n)
        table, pca = _table(vectors, ids, len(kept), spec, tokens[:n], recipe)
        fit = {k: v for k, v in spec.items() if k not in TABLE_KEYS}
        fit.setdefault("steps", 0)  # a variant without steps is the distillation alone
        settings = dataclasses.replace(recipe.fit, **fit, dim=spec.get("dim", recipe.dim))
        cpu = 0.0
        if settings.steps > 0:
            res = fit_static(table, pca, tokens[:n], targets[:n], settings)
            table, cpu = res.table, res.cpu_seconds
        scores = evaluate_sts(lambda texts, t=table: encode(texts, t), data)
        row = {"variant": {"sentences": n, **spec}, "sts_avg": scores["avg"], "fit_cpu_seconds": cpu}
        result["rows"].append({**row, "fit": dataclasses.asdict(settings) if settings.steps else None})
        print(json.dumps(result["rows"][-1]), flush=True)
        if args.output:  # every finished row is kept, even if the run is stopped
            args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="*", help="JSON variants (default: the recipe's comparison).")
    parser.add_argument("--teacher", default="all-MiniLM-L6-v2")
    parser.add_argument("--data-dir")
    parser.add_argument("--sentences", type=int, help="a variant's default corpus (default: the recipe's)")
    parser.add_argument(
        "--vectors",
        nargs=2,
        metavar=("CORPUS_TXT", "SHARDS"),
        help="reuse the teacher's vectors of these lines (a sentcl shard folder) instead of the teacher cache",
    )
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    variants = [json.loads(v) for v in args.variants] if args.variants else [dict(v) for v in VARIANTS]
    run(variants, resolve_data_dir(args.data_dir), args)


if __name__ == "__main__":
    main()
