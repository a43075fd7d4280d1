"""``sentcl encode`` in process against ``sentcl encode --engine ray`` (a local Ray on this machine's CPUs), on
the same distinct sentences (wiki1m_prefix, then the STS tasks' sentences: 42,387 in all; then SNLI's dev and
test sentences up to the count), alternating per round. Each round
runs both commands whole, each in a fresh process (model load, and Ray's start and actor pool, included), into
shard folders; sentences per second, the ratio per round, and the largest difference between their vectors.

    python -m bench.ray_encode --sentences 50000 --rounds 2

``--padding`` times nothing: it cuts the same sentences into blocks as each engine does (a shard, then blocks of
``--blocks`` rows; the in-process encode's chunk is ``ENCODE_CHUNK``), plans each block's passes with the
encoder's own ``plan_batches`` and writes padded cells per real token, for each block size.

    python -m bench.ray_encode --padding --blocks 512,4096 --output bench/results/ray_encode_padding.json
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import harness
from bench.common import _version, format_table, median, read_sentences, write_json
from sentcl.evaluation.senteval_readers import STS_TASKS, load_sts_task
from sentcl.files.paths import data_file, resolve_data_dir

ENGINES = {"in_process": [], "ray": ["--engine", "ray"]}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--sentences", type=int, default=50000)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--shard-size", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--padding", action="store_true", help="padded cells per token by block size; no timing"
    )
    parser.add_argument("--blocks", default="512,4096", help="block sizes for --padding (rows)")
    parser.add_argument("--output", default="bench/results/ray_encode.json")
    return parser.parse_args(argv)


def distinct_sentences(data_dir: Path, count: int) -> list[str]:
    """wiki1m_prefix's lines, then every STS sentence (test splits, and STS-B's and SICK's train and dev), then
    SNLI's dev and test sentences, each once, in that order; the first ``count``."""
    seen: dict[str, None] = dict.fromkeys(read_sentences(data_file(data_dir, "corpora", "wiki1m_prefix.txt")))
    for task in STS_TASKS:
        splits = ("train", "dev", "test") if task in ("STSBenchmark", "SICKRelatedness") else ("test",)
        for split in splits:
            for pairs in load_sts_task(data_dir, task, split).values():
                for s1, s2, _ in pairs:
                    seen.update(dict.fromkeys(s for s in (s1.strip(), s2.strip()) if s and "\n" not in s))
    for name in ("s1.dev", "s2.dev", "s1.test", "s2.test"):  # the two above hold ~42k: SNLI's fill the rest
        seen.update(dict.fromkeys(read_sentences(data_file(data_dir, "senteval", "SNLI", name))))
    sentences = list(seen)
    if len(sentences) < count:
        raise SystemExit(f"only {len(sentences)} distinct sentences, asked for {count}")
    return sentences[:count]


def run_encode(engine: str, args: argparse.Namespace, corpus: Path, out: Path) -> float:
    """Seconds of one whole ``sentcl encode`` command."""
    argv = [sys.executable, "-m", "sentcl.cli", "encode", "--model", args.model, "--input", str(corpus)]
    argv += ["--output", str(out), "--shard-size", str(args.shard_size), "--batch-size", str(args.batch_size)]
    start = time.perf_counter()
    env = {**os.environ, "OMP_NUM_THREADS": str(os.cpu_count() or 1)}  # in process: a torch thread a core
    done = subprocess.run([*argv, *ENGINES[engine]], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{engine} failed:\n{done.stderr[-3000:]}")
    return seconds


def padded_cells(lengths: list[int], shard: int, block: int, batch: int) -> int:
    """Padded cells of encoding sentences with these token counts: each shard cut into blocks of ``block``
    rows, each block sorted longest first and cut into passes by the encoder's ``plan_batches``."""
    from sentcl.modeling.batching import plan_batches

    cells = 0
    for at in range(0, len(lengths), shard):
        rows = lengths[at : at + shard]
        for b in range(0, len(rows), block):
            ordered = sorted(rows[b : b + block], reverse=True)
            cells += sum((end - start) * ordered[start] for start, end in plan_batches(ordered, batch))
    return cells


def padding(args: argparse.Namespace, sentences: list[str]) -> dict[str, Any]:
    from sentcl.modeling.batching import token_ids
    from sentcl.modeling.open import open_model

    encoder = open_model(args.model)
    lengths = [len(ids) for ids in token_ids(encoder.tokenizer, sentences, encoder.max_length)]
    real = sum(lengths)
    blocks = [int(b) for b in args.blocks.split(",")]
    return {
        "real_tokens": real,
        "padded_cells_per_token": {
            str(b): padded_cells(lengths, args.shard_size, b, args.batch_size) / real for b in blocks
        },
    }


def vectors(folder: Path) -> np.ndarray:
    from sentcl.data.shards import ShardSet

    return np.concatenate([np.asarray(a) for _, a in ShardSet.open(folder).iter_arrays()])  # (N, D)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    res: dict[str, Any] = {**harness.header("ray_encode", args, os.cpu_count() or 1, argv=argv), "rounds": []}
    res["machine"]["versions"].update({p: _version(p) for p in ("ray", "pyarrow")})
    sentences = distinct_sentences(resolve_data_dir(args.data_dir), args.sentences)
    if args.padding:
        res.update(sentences=len(sentences), padding=padding(args, sentences))
        print(res["padding"])
        print("wrote", write_json(args.output, res))
        return res
    diffs = []
    with tempfile.TemporaryDirectory(prefix="ray_encode_") as tmp:
        corpus = Path(tmp) / "corpus.txt"
        corpus.write_text("\n".join(sentences) + "\n", encoding="utf-8")
        for r in range(args.rounds):
            row: dict[str, float] = {}
            for engine in list(ENGINES) if r % 2 == 0 else list(ENGINES)[::-1]:
                row[f"{engine}_s"] = run_encode(engine, args, corpus, Path(tmp) / f"{engine}-{r}")
                row[f"{engine}_sent_per_s"] = len(sentences) / row[f"{engine}_s"]
            row["ratio"] = row["ray_sent_per_s"] / row["in_process_sent_per_s"]
            diffs.append(
                float(np.abs(vectors(Path(tmp) / f"ray-{r}") - vectors(Path(tmp) / f"in_process-{r}")).max())
            )
            res["rounds"].append(row)
            print(row, flush=True)
    res["sentences"] = len(sentences)
    res["summary"] = {
        "in_process_sent_per_s": median([r["in_process_sent_per_s"] for r in res["rounds"]]),
        "ray_sent_per_s": median([r["ray_sent_per_s"] for r in res["rounds"]]),
        "ratio_median": median([r["ratio"] for r in res["rounds"]]),
        "max_abs_diff": max(diffs),
    }
    res["note"] = (
        "Whole commands timed (model load; for Ray also its start and the actor pool); in process: one torch "
        "thread a core; Ray: one actor a core, one thread each. The machine has 2 cores "
        "shared with other agents' jobs (see loadavg_start/loadavg_end): absolute rates are low and noisy; the "
        "rounds alternate which engine runs first."
    )
    print(format_table(["round", "in process sent/s", "ray sent/s", "ratio"],
                       [[i, r["in_process_sent_per_s"], r["ray_sent_per_s"], r["ratio"]]
                        for i, r in enumerate(res["rounds"])]))  # fmt: skip
    print("wrote", write_json(args.output, res))
    return res


if __name__ == "__main__":
    main()
