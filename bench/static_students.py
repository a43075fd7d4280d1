"""Which static student: the choices of the distill_static recipe, measured on the seven STS tasks.

The teacher's token vectors are computed once (``sentcl.methods.static_distill.token_vectors``); each variant
then builds its table and, with ``steps`` > 0, fits it to the teacher's vectors of the corpus
(``sentcl.methods.static_fit``). A variant is a JSON object; what it leaves out is the built-in recipe's
(``sentcl recipes show distill_static``), and each row records the fit settings it ran with:

- the table: ``dim``, ``pca_dim`` (a wider PCA, narrowed by the fit's map), ``weighting`` (``p(w)`` from Zipf's
  law over the vocabulary order, or the corpus' token counts), SIF's ``a``, and ``context`` N: token vectors
  from the teacher's last hidden states in context, averaged over each token's occurrences in the first N
  corpus sentences (a token never seen keeps its vector alone: Model2Vec's tokenlearn idea, done our way);
- the vocabulary: ``words`` W, up to W corpus words outside the vocabulary (seen at least twice in the variant's
  sentences, or ``word_min_count`` times) added as whole-word rows (``bench.static_words``: Model2Vec's custom vocabulary, done our way);
- the corpus: ``sentences``, the first N of the offline English corpus (default ``--sentences``);
- the fit: any ``FitSettings`` field (``steps``, ``learning_rate``, ``batch_size``, ``loss``,
  ``contrastive_weight``, ...).

The recipe's last step, removing the common components, is left out here: ``bench.static_components``
measures it on built folders.

The teacher's vectors come from the teacher cache, or with ``--vectors CORPUS SHARDS`` from a shard folder of
the same teacher over other lines, matched by sentence. One thread; STS by ``sentcl.evaluation.sts`` on the
table's mean of rows, unit length (what the folder's encode gives).

    python -m bench.static_students --output bench/results/static_students.json
    python -m bench.static_students --sentences 160803 --vectors CORPUS.txt SHARDS \\
        --variants '{"steps": 3000, "learning_rate": 3e-3}' '{"steps": 600, "context": 40000}'
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench import static_words
from sentcl.config.static_recipe import StaticRecipe, load_static_recipe
from sentcl.evaluation.sts import evaluate_sts
from sentcl.files.paths import resolve_data_dir
from sentcl.methods import static_distill as sd
from sentcl.methods.static_fit import fit_static
from sentcl.methods.static_student import corpus_sentences, teacher_matrix, token_lists
from sentcl.modeling.open import open_model
from sentcl.modeling.postprocess.pca import fit_pca
from sentcl.modeling.static import bag_mean
from sentcl.modeling.static_tokens import StaticTokenizer
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
TABLE_KEYS = (
    "sentences",
    "dim",
    "pca_dim",
    "weighting",
    "a",
    "context",
    "words",
    "word_min_count",
)  # the rest of a variant: FitSettings' fields


def distilled_table(
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
    from sentcl.data.shards import ShardSet

    row = {line: i for i, line in enumerate(corpus.read_text(encoding="utf-8").split("\n"))}
    missing = [s for s in sentences if s not in row]
    if missing:
        raise SystemExit(f"{corpus}: {len(missing)} corpus sentences are missing, e.g. {missing[0]!r}")
    return ShardSet.open(shards).gather(np.array([row[s] for s in sentences]))  # (N, D)


def context_vectors(
    encoder: Any, sentences: list[str], ids: np.ndarray, single: np.ndarray, batch: int = 64
) -> tuple[np.ndarray, int]:
    """Each kept token's mean in-context vector over ``sentences``: the teacher's last hidden state at every
    occurrence (special tokens and padding left out), averaged; a token never seen keeps its vector alone
    (``single``, (V', H)). Returns (V', H) and the number of tokens seen."""
    vocab = len(encoder.tokenizer)
    sums = torch.zeros(vocab, single.shape[1], dtype=torch.float64)  # (V, H)
    counts = torch.zeros(vocab, dtype=torch.float64)  # (V,)
    specials = torch.tensor(sorted(set(encoder.tokenizer.all_special_ids)))
    with torch.inference_mode():
        for start in range(0, len(sentences), batch):
            enc = encoder.tokenizer(
                sentences[start : start + batch],
                padding=True,
                truncation=True,
                max_length=128,
                return_tensors="pt",
            )
            states = encoder.backbone(**enc).last_hidden_state  # (B, L, H)
            real = enc["attention_mask"].bool() & ~torch.isin(enc["input_ids"], specials)  # (B, L)
            flat = enc["input_ids"][real]  # (T,)
            sums.index_add_(0, flat, states[real].double())  # (T, H) into (V, H)
            counts.index_add_(0, flat, torch.ones(len(flat), dtype=torch.float64))
    seen = counts[ids] > 0  # (V',)
    out = single.astype(np.float64).copy()  # (V', H)
    out[seen.numpy()] = (sums[ids][seen] / counts[ids][seen][:, None]).numpy()
    return out.astype(np.float32), int(seen.sum())


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
    result: dict[str, Any] = {
        "command": " ".join(["python -m bench.static_students", *map(shlex.quote, sys.argv[1:])]),
        "teacher": args.teacher,
        "corpus_sentences": len(sentences),
        "teacher_vectors": "reused by sentence: " + " ".join(args.vectors)
        if args.vectors
        else "teacher cache",
        "token_vectors_cpu_seconds": token_cpu,
        "rows": [],
    }
    contexts: dict[int, np.ndarray] = {}
    for spec in variants:
        n = spec.get("sentences", default_n)
        base = vectors
        if spec.get(
            "context"
        ):  # token vectors from the teacher's outputs in context, over the first sentences
            m = int(spec["context"])
            if m not in contexts:
                start = time.process_time()
                contexts[m], seen = context_vectors(encoder, sentences[:m], ids, vectors)
                result.setdefault("context_cpu_seconds", {})[m] = time.process_time() - start
                result.setdefault("context_tokens_seen", {})[m] = seen
            base = contexts[m]
        rows, vocab, own, tok, added = base, len(kept), tokens[:n], model, []
        if spec.get("words"):  # whole-word rows after the vocabulary's
            rust = encoder.tokenizer.backend_tokenizer
            least = int(spec.get("word_min_count", 2))
            added = static_words.split_words(rust, sentences[:n], int(spec["words"]), least)
            tok = StaticTokenizer(static_words.with_words(rust, added))
            rows = np.concatenate([base, static_words.word_vectors(encoder, added)])  # (V' + W, H)
            ids_all = np.concatenate([ids, vocab + np.arange(len(added))])  # (V' + W,)
            vocab += len(added)
            own = tok.ids(sentences[:n]).lists()
        table, pca = distilled_table(rows, ids_all if added else ids, vocab, spec, own, recipe)
        fit = {k: v for k, v in spec.items() if k not in TABLE_KEYS}
        fit.setdefault("steps", 0)  # a variant without steps is the distillation alone
        settings = dataclasses.replace(recipe.fit, **fit, dim=spec.get("dim", recipe.dim))
        cpu = 0.0
        if settings.steps > 0:
            res = fit_static(table, pca, own, targets[:n], settings)
            table, cpu = res.table, res.cpu_seconds
        scores = evaluate_sts(lambda texts, t=table, k=tok: unit_rows(bag_mean(t, k.ids(texts))), data)
        row = {"variant": {"sentences": n, **spec}, "sts_avg": scores["avg"], "fit_cpu_seconds": cpu}
        row |= {"added_words": len(added)} if spec.get("words") else {}
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
