"""Is the static student held back by its text or by its form? The recipe's table, fitted with more text or
read through a richer head, on the seven STS tasks, with what each head costs in encode speed.

The recipe's student is a mean of token rows through a linear map (folded into the table afterwards). A
variant (a JSON object) changes one of two things, on the recipe's corpus and fit otherwise
(``sentcl recipes show distill_static``):

- the text: ``windows`` K adds K random word windows of every corpus sentence to the fit (a window has
  ``min_words`` words or more, and fewer than its sentence; seed k for the k-th), each with the teacher's
  vector of the window (encoded into the teacher cache once): more text, where the data folder has no more;
- the form (``head``, ``bench.static_heads``): ``linear`` is the recipe's; ``mlp`` (``hidden`` units),
  ``max``, ``attention`` and ``weights`` (``heads``, ``qk``) are richer. None folds into one table, so each is
  timed: the head's encode (the folder's tokenizer, the rows, the head) against the folded mean's, one thread,
  alternating rounds on ``--speed-sentences`` corpus sentences; the attention heads also as per-token tables
  (the form a folder would run, checked against the head), and with ``--teacher-in-rounds`` against the
  teacher's encode in the same rounds.

Two more keys, on any head:

- ``bigrams`` B: every pair of neighbouring tokens also looks up a row of B hashed buckets (fastText's word
  n-grams, Joulin, Grave, Bojanowski & Mikolov, "Bag of tricks for efficient text classification"), started at
  zero, in the same mean: still a mean of rows (a bigger table), timed like a head;
- ``components`` k: the mean and top k principal directions of the head's outputs over the corpus are removed
  before the cosine (``sentcl.methods.static_components``' rule, applied after the head; for the linear head it
  is the recipe's folded step).

Any other key is a ``FitSettings`` field (``steps``, ``learning_rate``, ...). One thread.

    python -m bench.static_capacity --output bench/results/static_capacity.json \\
        --variants '{"windows": 1}' '{"head": "mlp"}' '{"head": "max"}'
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

from bench.static_heads import AttentionTables, make_head, with_bigrams
from bench.static_students import distilled_table
from sentcl.config.static_recipe import FitSettings, load_static_recipe
from sentcl.evaluation.speed import alternate_rounds, speed_rows, timed
from sentcl.evaluation.sts import evaluate_sts
from sentcl.files.paths import resolve_data_dir
from sentcl.methods import static_distill as sd
from sentcl.methods.static_components import Components, components_of, remove_components
from sentcl.methods.static_fit import MeanHead, bags, fit_head, fit_targets
from sentcl.methods.static_student import corpus_sentences, teacher_matrix, token_lists
from sentcl.methods.teacher_cache import distinct_texts
from sentcl.modeling.open import open_model
from sentcl.modeling.static import bag_mean
from sentcl.modeling.static_tokens import StaticTokenizer, TokenRows
from sentcl.modeling.static_weighted import WeightedMean
from sentcl.similarity import unit_rows

HEADS = ("linear", "mlp", "max", "attention", "weights")
TEXT_KEYS = (
    "windows",
    "min_words",
    "head",
    "hidden",
    "heads",
    "qk",
    "bigrams",
    "components",
)  # the rest of a variant: FitSettings' fields


def windows(sentences: list[str], k: int, min_words: int) -> list[str]:
    """K random word windows of every sentence with more than ``min_words`` words, distinct, in order."""
    found = []
    for seed in range(k):
        rng = np.random.default_rng(seed)
        for sentence in sentences:
            words = sentence.split()
            if len(words) <= min_words:
                continue
            size = int(rng.integers(min_words, len(words)))  # min_words .. len - 1
            start = int(rng.integers(0, len(words) - size + 1))
            found.append(" ".join(words[start : start + size]))
    return distinct_texts(found)[0]


def fit(
    model: MeanHead, token_lists_: list[list[int]], targets: torch.Tensor, settings: FitSettings
) -> float:
    """The recipe's fit loop over ``model`` (``sentcl.methods.static_fit.fit_head``); returns its CPU seconds."""
    start = time.process_time()
    fit_head(model, token_lists_, targets, settings)
    return time.process_time() - start


def head_encode(
    model: MeanHead, tokenizer: StaticTokenizer, bigrams: int = 0, removed: Components | None = None
) -> Any:
    """texts -> unit vectors (N, k') through the head, as a folder would run it (the bigram buckets looked
    up, the common components removed, where the variant has them)."""
    model.eval()
    vocab = model.mean.weight.shape[0] - bigrams

    def encode_chunk(texts: list[str]) -> np.ndarray:
        rows: TokenRows = tokenizer.ids(texts)
        if bigrams:
            rows = with_bigrams(rows, vocab, bigrams)
        with torch.inference_mode():
            return model(torch.from_numpy(rows.ids), torch.from_numpy(rows.offsets)).numpy()  # (n, k')

    def encode(texts: list[str]) -> np.ndarray:
        # chunks of 1,024 texts: the attention head pads each chunk to its longest text
        out = np.concatenate([encode_chunk(texts[s : s + 1024]) for s in range(0, max(len(texts), 1), 1024)])
        return finish(out, removed)

    return encode


def finish(out: np.ndarray, removed: Components | None) -> np.ndarray:
    """Head outputs (N, k') to unit vectors, the common components removed where the variant has them."""
    return unit_rows(out if removed is None else remove_components(out, removed))


def tables_encode(
    tables: AttentionTables | WeightedMean, tokenizer: StaticTokenizer, removed: Components | None
) -> Any:
    """texts -> unit vectors through a head's tables (``AttentionTables``, sentcl's ``WeightedMean``)."""
    return lambda texts: finish(tables(tokenizer.ids(texts)), removed)


def head_components(model: MeanHead, lists: list[list[int]], k: int) -> Components:
    """The mean and top ``k`` principal directions of the head's outputs over ``lists`` (the corpus)."""
    model.eval()
    with torch.inference_mode():  # chunks of 1,024 texts: the attention heads pad each to its longest text
        chunks = (
            model(*bags(lists, np.arange(s, min(s + 1024, len(lists))))).numpy()  # (B, k')
            for s in range(0, len(lists), 1024)
        )
        return components_of(chunks, k)


def folded_encode(model: MeanHead, tokenizer: StaticTokenizer) -> Any:
    """The recipe's folder: the map folded into the table, a mean of rows (``bag_mean``)."""
    table = model.folded()  # (V, k')
    return lambda texts: unit_rows(bag_mean(table, tokenizer.ids(texts)))


def speed(
    encoders: dict[str, Any], sentences: list[str], rounds: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each encoder's rates and CPU per wall second in alternating rounds, one call per pass (``speed_rows``
    makes them ratios to a reference)."""
    rates, cpu, _ = alternate_rounds({n: timed(e) for n, e in encoders.items()}, sentences, rounds, 1.0, None)
    return rates, cpu


def run(variants: list[dict[str, Any]], data: Path, args: argparse.Namespace) -> dict[str, Any]:
    torch.set_num_threads(1)
    recipe = load_static_recipe()
    encoder = open_model(args.teacher)
    kept = sd.kept_tokens(encoder.tokenizer, recipe.skip_pattern)
    ids = np.flatnonzero(kept)
    vectors = sd.token_vectors(encoder, ids.tolist())  # (V', H)
    sentences = corpus_sentences(data, args.sentences)
    tokens = token_lists(encoder, sentences)
    teacher = teacher_matrix(args.teacher, sentences, None)  # (N, D)
    tokenizer = StaticTokenizer(encoder.tokenizer.backend_tokenizer)
    timing = sentences[: args.speed_sentences]
    result: dict[str, Any] = {
        "command": " ".join(["python -m bench.static_capacity", *map(shlex.quote, sys.argv[1:])]),
        "teacher": args.teacher,
        "corpus_sentences": len(sentences),
        "speed_sentences": len(timing),
        "rows": [],
    }
    for spec in variants:
        table, pca = distilled_table(vectors, ids, len(kept), {"weighting": recipe.weighting}, tokens, recipe)
        fields = {k: v for k, v in spec.items() if k not in TEXT_KEYS}
        settings = dataclasses.replace(recipe.fit, **fields, dim=recipe.dim)
        own, y, added = tokens, teacher, 0
        if spec.get("windows"):
            texts = windows(sentences, int(spec["windows"]), int(spec.get("min_words", 2)))
            own = tokens + token_lists(encoder, texts)
            y = np.concatenate([teacher, teacher_matrix(args.teacher, texts, None)])  # (N + W, D)
            added = len(texts)
        targets = torch.from_numpy(fit_targets(pca, y, settings.center)[:, : recipe.dim].astype(np.float32))
        kind = spec.get("head", "linear")
        if kind not in HEADS:
            raise SystemExit(f"--variants {json.dumps(spec)}: head {kind!r} is not one of {', '.join(HEADS)}")
        buckets = int(spec.get("bigrams", 0))
        if buckets:  # zero rows after the vocabulary's, and every list with its pairs' buckets
            table = np.concatenate(
                [table, np.zeros((buckets, table.shape[1]), dtype=np.float32)]
            )  # (V + B, k)
            own = with_bigrams(TokenRows.of(own), len(kept), buckets).lists()
        torch.manual_seed(settings.seed)  # the head's start, then the fit's batches, from the recipe's seed
        model = make_head(
            table,
            recipe.dim,
            kind,
            int(spec.get("hidden", 1024)),
            int(spec.get("heads", 4)),
            int(spec.get("qk", 16)),
        )
        saved = args.load / f"{len(result['rows'])}.pt" if args.load else None
        if saved is not None:  # a head this bench saved (--save): timed and scored again, not fitted
            if not saved.is_file():
                raise SystemExit(
                    f"--load {args.load}: no {saved.name}, the head of variant {json.dumps(spec)}"
                )
            state = torch.load(saved, weights_only=False)  # our own file
            if state["variant"] != spec:
                raise SystemExit(
                    f"{saved} holds the variant {json.dumps(state['variant'])}, not {json.dumps(spec)}"
                )
            model.load_state_dict(state["state"])
            cpu, removed = None, state["removed"]
        else:
            cpu = fit(model, own, targets, settings)
            removed = (
                head_components(model, [ids for ids in own if ids], int(spec["components"]))
                if spec.get("components")
                else None
            )
        encode = head_encode(model, tokenizer, buckets, removed)
        row: dict[str, Any] = {
            "variant": spec,
            "windows_added": added,
            "sts_avg": evaluate_sts(encode, data)["avg"],
            "fit_cpu_seconds": cpu,
            "fit": dataclasses.asdict(settings),
        }
        if args.save and saved is None:
            args.save.mkdir(parents=True, exist_ok=True)
            torch.save(
                {"variant": spec, "state": model.state_dict(), "removed": removed},
                args.save / f"{len(result['rows'])}.pt",
            )
        if kind != "linear" or buckets:
            encoders = {"folded": folded_encode(model, tokenizer), "head": encode}
            if kind in ("attention", "weights"):
                # the same head as per-token tables (the form a folder would run), checked against it
                tables = AttentionTables.of(model) if kind == "attention" else model.tables()
                encoders["tables"] = tables_encode(tables, tokenizer, removed)
                check = timing[:2000]
                row["tables_max_abs_diff"] = float(np.abs(encoders["tables"](check) - encode(check)).max())
            if args.teacher_in_rounds:
                encoders["teacher"] = encoder.encode
            rates, cpu = speed(encoders, timing, args.rounds)
            found = speed_rows(rates, cpu, "folded")  # its "speed_vs_teacher": here, against the folded mean
            row["speed_vs_folded_mean"] = found["head"]["speed_vs_teacher"]
            row["round_ratios"] = found["head"]["round_ratios"]
            if (
                args.teacher_in_rounds
            ):  # each point's ratio to the teacher in the same round, and their median
                against = speed_rows(rates, cpu, "teacher")
                row["round_ratios_vs_teacher"] = {n: r["round_ratios"] for n, r in against.items()}
                row["speed_vs_teacher"] = {n: r["speed_vs_teacher"] for n, r in against.items()}
            row["sentences_per_s"] = {n: r["sentences_per_s"] for n, r in found.items()}
        result["rows"].append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "fit"}), flush=True)
        if args.output:  # every finished row is kept, even if the run is stopped
            args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="+", required=True, help="JSON variants (module doc)")
    parser.add_argument("--teacher", default="all-MiniLM-L6-v2")
    parser.add_argument("--data-dir")
    parser.add_argument("--sentences", type=int, default=160_803, help="the corpus: its first N sentences")
    parser.add_argument(
        "--speed-sentences", type=int, default=10_000, help="corpus sentences a head is timed on"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", type=Path)
    parser.add_argument(
        "--teacher-in-rounds",
        action="store_true",
        help="time the teacher's encode in the same rounds as each head",
    )
    parser.add_argument("--save", type=Path, help="a folder for each trained head's state (N.pt)")
    parser.add_argument(
        "--load",
        type=Path,
        help="a --save folder: its heads (N.pt, the same variants) are loaded, not fitted",
    )
    args = parser.parse_args()
    run([json.loads(v) for v in args.variants], resolve_data_dir(args.data_dir), args)


if __name__ == "__main__":
    main()
