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
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sentcl.evaluation.sts import evaluate_sts
from sentcl.files.paths import resolve_data_dir
from sentcl.methods import static_distill as sd
from sentcl.methods.static_fit import FitSettings, fit_static
from sentcl.methods.static_student import DEFAULT_SENTENCES, corpus_sentences, teacher_matrix, token_lists
from sentcl.modeling.open import open_model
from sentcl.modeling.static import bag_mean
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


def _table(
    vectors: np.ndarray, ids: np.ndarray, vocab: int, spec: dict[str, Any], tokens: list[list[int]]
) -> Any:
    pca = fit_pca(vectors, spec.get("dim", 256))
    table = np.zeros((vocab, pca.components.shape[0]), np.float32)  # (V, k)
    table[ids] = pca.apply(vectors)  # (V', k)
    a = spec.get("a", sd.SIF_A)
    p = (
        sd.zipf_probabilities(vocab)
        if spec["weighting"] == "zipf"
        else sd.corpus_probabilities(tokens, vocab)
    )
    return table * sd.sif_weights(p, a)[:, None].astype(np.float32), pca


def run(variants: list[dict[str, Any]], data: Path, teacher: str) -> dict[str, Any]:
    torch.set_num_threads(1)
    encoder = open_model(teacher)
    kept = sd.kept_tokens(encoder.tokenizer)
    ids = np.flatnonzero(kept)
    start = time.process_time()
    vectors = sd.token_vectors(encoder, ids.tolist())  # (V', H)
    token_cpu = time.process_time() - start
    sentences = corpus_sentences(data, DEFAULT_SENTENCES)
    tokens = token_lists(encoder, sentences)
    targets = teacher_matrix(teacher, sentences, None)  # (N, D)
    rust = encoder.tokenizer.backend_tokenizer

    def encode(texts: list[str], table: np.ndarray) -> np.ndarray:
        return unit_rows(bag_mean(table, [e.ids for e in rust.encode_batch(texts, add_special_tokens=False)]))

    rows = []
    for spec in variants:
        table, pca = _table(vectors, ids, len(kept), spec, tokens)
        fit = {k: v for k, v in spec.items() if k not in ("dim", "weighting", "a")}
        cpu = 0.0
        if fit.get("steps", 0) > 0:
            result = fit_static(table, pca, tokens, targets, FitSettings(**fit))
            table, cpu = result.table, result.cpu_seconds
        scores = evaluate_sts(lambda texts, t=table: encode(texts, t), data)
        rows.append({"variant": spec, "sts_avg": scores["avg"], "fit_cpu_seconds": cpu})
        print(json.dumps(rows[-1]), flush=True)
    return {
        "teacher": teacher,
        "corpus_sentences": len(sentences),
        "token_vectors_cpu_seconds": token_cpu,
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="*", help="JSON variants (default: the recipe's comparison).")
    parser.add_argument("--teacher", default="all-MiniLM-L6-v2")
    parser.add_argument("--data-dir")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    variants = [json.loads(v) for v in args.variants] if args.variants else [dict(v) for v in VARIANTS]
    result = run(variants, resolve_data_dir(args.data_dir), args.teacher)
    if args.output:
        args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
