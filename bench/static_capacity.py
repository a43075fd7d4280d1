"""Is the static student held back by its text or by its form? The recipe's table, fitted with more text or
read through a richer head, on the seven STS tasks, with what each head costs in encode speed.

The recipe's student is a mean of token rows through a linear map (folded into the table afterwards). A
variant (a JSON object) changes one of two things, on the recipe's corpus and fit otherwise
(``sentcl recipes show distill_static``):

- the text: ``windows`` K adds K random word windows of every corpus sentence to the fit (a window has
  ``min_words`` words or more, and fewer than its sentence; seed k for the k-th), each with the teacher's
  vector of the window (encoded into the teacher cache once): more text, where the data folder has no more;
- the form (``head``): ``linear`` is the recipe's; ``mlp`` adds a residual two-layer MLP (``hidden`` units,
  GELU) on the mapped mean; ``max`` adds a linear map of the maximum over the rows of a second table, started
  as a copy (the concatenated power means of Rücklé, Eger, Peyrard & Gurevych, "Concatenated power mean word
  embeddings as universal cross-lingual sentence representations": the mean and the maximum, each mapped).
  Neither folds into one table, so each is timed: the head's encode (the folder's tokenizer, the rows, the
  head) against the folded mean's, one thread, alternating rounds on ``--speed-sentences`` corpus sentences.

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
from torch import nn

from bench.static_students import distilled_table
from sentcl.config.static_recipe import FitSettings, load_static_recipe
from sentcl.evaluation.speed import alternate_rounds, speed_rows
from sentcl.evaluation.sts import evaluate_sts
from sentcl.files.paths import resolve_data_dir
from sentcl.methods import static_distill as sd
from sentcl.methods.static_fit import bags, fit_loss, fit_targets
from sentcl.methods.static_student import corpus_sentences, teacher_matrix, token_lists
from sentcl.methods.teacher_cache import distinct_texts
from sentcl.modeling.open import open_model
from sentcl.modeling.static import bag_mean
from sentcl.modeling.static_tokens import StaticTokenizer, TokenRows
from sentcl.similarity import unit_rows

HEADS = ("linear", "mlp", "max")
TEXT_KEYS = ("windows", "min_words", "head", "hidden")  # the rest of a variant: FitSettings' fields


class Head(nn.Module):
    """The student: the mean of rows through ``linear`` (k -> k'), plus the variant's head."""

    def __init__(self, table: np.ndarray, out: int, kind: str, hidden: int) -> None:
        super().__init__()
        self.kind = kind
        rows = torch.from_numpy(table.copy())  # (V, k)
        self.mean = nn.EmbeddingBag.from_pretrained(rows, freeze=False, mode="mean", sparse=True)
        self.linear = nn.Linear(table.shape[1], out, bias=False)
        with torch.no_grad():
            self.linear.weight.copy_(torch.eye(out, table.shape[1]))  # (k', k): the first k' PCA axes
        if kind == "mlp":
            self.mlp = nn.Sequential(nn.Linear(out, hidden), nn.GELU(), nn.Linear(hidden, out))
            nn.init.zeros_(self.mlp[2].weight)  # the start is the recipe's student
            nn.init.zeros_(self.mlp[2].bias)
        if kind == "max":  # torch's max bags take no sparse gradient: a dense second table
            self.max = nn.EmbeddingBag.from_pretrained(rows.clone(), freeze=False, mode="max")
            self.max_map = nn.Linear(table.shape[1], out, bias=False)
            nn.init.zeros_(self.max_map.weight)

    def forward(self, flat: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        mapped = self.linear(self.mean(flat, offsets))  # (B, k')
        if self.kind == "mlp":
            return mapped + self.mlp(mapped)
        if self.kind == "max":
            return mapped + self.max_map(self.max(flat, offsets))
        return mapped

    def optimizers(self, lr: float) -> list[torch.optim.Optimizer]:
        dense = [p for name, p in self.named_parameters() if name != "mean.weight"]
        return [torch.optim.SparseAdam([self.mean.weight], lr=lr), torch.optim.Adam(dense, lr=lr)]


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


def fit(model: Head, token_lists_: list[list[int]], targets: torch.Tensor, settings: FitSettings) -> float:
    """The recipe's fit loop over ``model`` (its batches, warm-up and loss); returns its CPU seconds."""
    torch.manual_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    usable = np.array([i for i, ids in enumerate(token_lists_) if len(ids)], dtype=np.int64)
    optimizers = model.optimizers(settings.learning_rate)
    warmup = max(1, settings.warmup_steps)
    schedules = [
        torch.optim.lr_scheduler.LambdaLR(o, lambda s: min(1.0, (s + 1) / warmup)) for o in optimizers
    ]
    order, cursor, start = rng.permutation(usable), 0, time.process_time()
    for _ in range(settings.steps):
        if cursor + settings.batch_size > len(order):
            order, cursor = rng.permutation(usable), 0
        rows = order[cursor : cursor + settings.batch_size]
        cursor += settings.batch_size
        flat, offsets = bags(token_lists_, rows)
        loss = fit_loss(model(flat, offsets), targets[torch.from_numpy(rows)], settings)
        for opt in optimizers:
            opt.zero_grad(set_to_none=True)
        loss.backward()
        for opt, schedule in zip(optimizers, schedules, strict=True):
            opt.step()
            schedule.step()
    return time.process_time() - start


def head_encode(model: Head, tokenizer: StaticTokenizer) -> Any:
    """texts -> unit vectors (N, k') through the head, as a folder would run it."""
    model.eval()

    def encode(texts: list[str]) -> np.ndarray:
        rows: TokenRows = tokenizer.ids(texts)
        with torch.inference_mode():
            out = model(torch.from_numpy(rows.ids), torch.from_numpy(rows.offsets))  # (N, k')
        return unit_rows(out.numpy())

    return encode


def folded_encode(model: Head, tokenizer: StaticTokenizer) -> Any:
    """The recipe's folder: the map folded into the table, a mean of rows (``bag_mean``)."""
    with torch.no_grad():
        table = (model.mean.weight @ model.linear.weight.T).numpy()  # (V, k) @ (k, k')
    return lambda texts: unit_rows(bag_mean(table, tokenizer.ids(texts)))


def speed(encoders: dict[str, Any], sentences: list[str], rounds: int) -> dict[str, dict[str, Any]]:
    """Each encoder's rate and its ratio to the folded mean's, alternating rounds, one call per pass."""

    def timed(encode: Any) -> Any:
        def run(texts: list[str]) -> tuple[float, float, np.ndarray]:
            start, cpu = time.perf_counter(), time.process_time()
            out = encode(texts)
            return time.perf_counter() - start, time.process_time() - cpu, out

        return run

    rates, cpu, _ = alternate_rounds({n: timed(e) for n, e in encoders.items()}, sentences, rounds, 1.0, None)
    return speed_rows(rates, cpu, "folded")


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
        model = Head(table, recipe.dim, kind, int(spec.get("hidden", 1024)))
        cpu = fit(model, own, targets, settings)
        encode = head_encode(model, tokenizer)
        row: dict[str, Any] = {
            "variant": spec,
            "windows_added": added,
            "sts_avg": evaluate_sts(encode, data)["avg"],
            "fit_cpu_seconds": cpu,
            "fit": dataclasses.asdict(settings),
        }
        if kind != "linear":
            found = speed({"folded": folded_encode(model, tokenizer), kind: encode}, timing, args.rounds)
            row["speed_vs_folded_mean"] = found[kind]["speed_vs_teacher"]  # the reference is the folded mean
            row["round_ratios"] = found[kind]["round_ratios"]
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
    args = parser.parse_args()
    run([json.loads(v) for v in args.variants], resolve_data_dir(args.data_dir), args)


if __name__ == "__main__":
    main()
