"""One ``main`` for the benchmarks: the shared options, the fresh-worker protocol, the result file.

A benchmark module defines ``parse_args`` (starting from :func:`parser`), ``run(args) -> result``,
``report(result) -> str`` and, if it measures in fresh processes, ``worker(args) -> dict``; its ``main`` is
``harness.main(argv, parse_args, run, report, worker)``. A worker is the same module started again with
``--worker NAME`` (:func:`spawn_worker`); it prints one JSON line as its last output.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from bench.common import machine_info, read_sentences, worker_env, write_json
from sentcl.data.sampler import batches, epoch_permutation
from sentcl.defaults import DATA_DIR_DEFAULT, DATA_ENV
from sentcl.files.paths import data_file, resolve_data_dir

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_CORPUS = "corpora/wiki1m_prefix.txt"
NOT_CONFIG = ("output", "worker")  # options that are not part of a result's "config"


def parser(
    doc: str | None,
    name: str,
    *,
    corpus: bool = True,
    batch_size: int | None = 64,
    max_length: int = 32,
    threads: int | None = 2,
    seed: int = 42,
    worker: type | None = str,
) -> argparse.ArgumentParser:
    """The options the training and encoding benchmarks share; ``name`` names the result file.

    --model, --data-dir, --corpus (relative to the data folder), --batch-size, --max-length, --threads,
    --seed, --output (bench/results/NAME.json) and the hidden --worker; ``None`` leaves an option out."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=DEFAULT_MODEL)
    p.add_argument("--data-dir", default=None)
    if corpus:
        p.add_argument("--corpus", default=DEFAULT_CORPUS, help="relative to the data folder")
    if batch_size is not None:
        p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--max-length", type=int, default=max_length)
    if threads is not None:
        p.add_argument("--threads", type=int, default=threads)
    p.add_argument("--seed", type=int, default=seed)
    p.add_argument("--output", default=f"bench/results/{name}.json")
    if worker is not None:
        p.add_argument("--worker", type=worker, default=None, help=argparse.SUPPRESS)
    return p


def index_parser(
    doc: str | None, name: str, embeddings_help: str, finished_help: str
) -> argparse.ArgumentParser:
    """The options the index benchmarks on real sentences share (bench/index_real.py, bench/index_binary.py):
    --model, --data-dir, --cache, --embeddings, --n, --finished-only, --target-recall, --rounds, --one-query,
    --threads, --seed and --output (bench/results/NAME.json); each adds its own."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="all-MiniLM-L6-v2")
    p.add_argument("--data-dir", default=os.environ.get(DATA_ENV, str(Path(*DATA_DIR_DEFAULT))))
    p.add_argument("--cache", default="runs/bench-real", help="Corpus, shards and query embeddings.")
    p.add_argument("--embeddings", help=embeddings_help)
    p.add_argument("--n", type=int, help="Use only the first N corpus rows (default: all).")
    p.add_argument("--finished-only", action="store_true", help=finished_help)
    p.add_argument("--target-recall", type=float, default=0.95)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--one-query", type=int, default=200, help="Queries timed one at a time.")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", default=f"bench/results/{name}.json")
    return p


def main(
    argv: list[str] | None,
    parse_args: Callable[[list[str] | None], argparse.Namespace],
    run: Callable[[argparse.Namespace], dict[str, Any]],
    report: Callable[[dict[str, Any]], str],
    worker: Callable[[argparse.Namespace], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Parse; as a worker print the worker's JSON line; else run, print the report, write the result file."""
    args = parse_args(argv)
    if worker is not None and getattr(args, "worker", None) is not None:
        out = worker(args)
        print(json.dumps(out))
        return out
    res = run(args)
    print(report(res))
    print("wrote", write_json(args.output, res))
    return res


def header(
    benchmark: str,
    args: argparse.Namespace,
    threads: int,
    skip: Iterable[str] = (),
    argv: list[str] | None = None,
) -> dict[str, Any]:
    """The first keys of every result: benchmark, command (``argv``, else the process's), machine (with its
    load now: call it at the start) and the options as "config"."""
    hidden = {*NOT_CONFIG, *skip}
    return {
        "benchmark": benchmark,
        "command": f"python -m bench.{benchmark} " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine_info(threads),
        "config": {k: v for k, v in vars(args).items() if k not in hidden},
    }


def spawn_worker(
    module: str, name: str, options: Mapping[str, Any], env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``python -m MODULE --worker NAME --key value ...`` in a fresh process (None values left out):
    its last stdout line, parsed. ``env`` defaults to :func:`bench.common.worker_env`."""
    command = [sys.executable, "-m", module, "--worker", name]
    for key, value in options.items():
        if value is not None:
            command += [f"--{key.replace('_', '-')}", str(value)]
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, env=dict(env or worker_env(ROOT)), check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{module} worker {name} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def options_of(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The named options of ``args``, to forward to a worker."""
    return {name: getattr(args, name) for name in names}


def corpus_batches(
    corpus: str, data_dir: str | None, seed: int, batch_size: int, total: int
) -> tuple[list[list[str]], Path]:
    """The first ``total`` full batches of the training loop's sampler (seeded permutation) over a corpus
    (a path, or relative to the data folder): the sentences, and the corpus' path."""
    path = Path(corpus)
    if not path.is_absolute():
        path = data_file(resolve_data_dir(data_dir), corpus)
    sentences = read_sentences(path)
    order = batches(epoch_permutation(len(sentences), seed, 0), batch_size)
    full = [b for b in order if len(b) == batch_size]
    if len(full) < total:
        raise ValueError(f"{path} has {len(full)} full batches of {batch_size}, the run needs {total}")
    return [[sentences[i] for i in b] for b in full[:total]], path
