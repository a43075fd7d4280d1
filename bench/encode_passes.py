"""In-process ``encode`` with passes cut by padding (``modeling.batching.plan_batches``, the default) against
the fixed-count passes it replaced (every ``--batch-size`` sentences of the length-sorted list), alternating
per round on the same random corpus sentences; sentences per second, the ratio per round, and the largest
difference between the two paths' vectors.

    python -m bench.encode_passes --sentences 1400 --batch-size 64 --threads 2 --rounds 4
"""

from __future__ import annotations

import argparse
import functools
import random
import time
from typing import Any

import numpy as np

from bench import harness
from bench.common import format_table, median, read_sentences, set_threads, write_json
from sentcl.files.paths import data_file, resolve_data_dir


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--pooler", default="avg")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--sentences", type=int, default=1400)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="bench/results/encode_passes.json")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    set_threads(args.threads)
    import sentcl.modeling.encoder as encoder_module
    from sentcl.modeling.batching import length_sorted_batches
    from sentcl.modeling.open import open_model

    pool = read_sentences(data_file(resolve_data_dir(args.data_dir), "corpora", "wiki1m_prefix.txt"))
    sentences = random.Random(args.seed).sample(pool, args.sentences)
    encoder = open_model(args.model, pooler=args.pooler)
    paths = {
        "padding": length_sorted_batches,
        "fixed": functools.partial(length_sorted_batches, max_cells=2**62, max_padding=float("inf")),
    }
    res: dict[str, Any] = {**harness.header("encode_passes", args, args.threads, argv=argv), "rounds": []}
    vectors: dict[str, np.ndarray] = {}
    encoder.encode(sentences[: args.batch_size], batch_size=args.batch_size)  # warm-up
    for r in range(args.rounds):
        row: dict[str, float] = {}
        for name in list(paths) if r % 2 == 0 else list(paths)[::-1]:
            encoder_module.length_sorted_batches = paths[name]  # what SentenceEncoder.encode calls
            start = time.perf_counter()
            vectors[name] = encoder.encode(sentences, batch_size=args.batch_size, max_length=args.max_length)
            row[name] = len(sentences) / (time.perf_counter() - start)
        row["ratio"] = row["padding"] / row["fixed"]
        res["rounds"].append(row)
        print(
            f"round {r + 1}/{args.rounds}: padding {row['padding']:.1f}, fixed {row['fixed']:.1f} sent/s",
            flush=True,
        )
    encoder_module.length_sorted_batches = length_sorted_batches
    res["summary"] = {
        "padding_sentences_per_s": median([row["padding"] for row in res["rounds"]]),
        "fixed_sentences_per_s": median([row["fixed"] for row in res["rounds"]]),
        "ratio_median": median([row["ratio"] for row in res["rounds"]]),
        "max_abs_diff": float(np.abs(vectors["padding"] - vectors["fixed"]).max()),
    }
    s = res["summary"]
    print(
        format_table(
            ["padding-cut sent/s", "fixed-count sent/s", "ratio (median per round)", "max |Δ|"],
            [
                [
                    s["padding_sentences_per_s"],
                    s["fixed_sentences_per_s"],
                    s["ratio_median"],
                    s["max_abs_diff"],
                ]
            ],
        )
    )
    print("wrote", write_json(args.output, res))
    return res


if __name__ == "__main__":
    main()
