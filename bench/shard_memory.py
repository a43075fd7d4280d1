"""Peak memory of ``sentcl encode --shard-size`` as the corpus grows: it should stay flat.

For each size, a generated corpus (the wiki prefix's lines, cycled with a running number so that every
line differs; or numbered word salad when the data folder is absent) is encoded into shards by the real
CLI in a fresh process, which reports its peak RSS (VmHWM) and wall time. Flat memory = the peak does not
grow with the number of lines (only one shard's sentences and embeddings are held at a time).

    python -m bench.shard_memory --model all-MiniLM-L6-v2 --sizes 50000,200000,1000000 --max-length 16
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import harness
from bench.common import format_table, worker_env, write_json

ROOT = Path(__file__).resolve().parent.parent
WORKER = """
import json, sys
from sentcl.cli import main
from bench.common import max_rss_mb
code = main(sys.argv[1:])
print(json.dumps({"code": code, "peak_rss_mb": max_rss_mb()}))
"""


def write_corpus(path: Path, lines: int, seed_lines: list[str]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(lines):
            f.write(f"{seed_lines[i % len(seed_lines)]} ({i})\n")


def seed_sentences() -> list[str]:
    try:
        from sentcl.files.paths import resolve_data_dir

        path = resolve_data_dir() / "corpora" / "wiki1m_prefix.txt"
        return [s.strip() for s in path.read_text(encoding="utf-8").splitlines() if s.strip()]
    except (OSError, ValueError):
        words = "the a man dog runs river market price falls bird tree woman piano plays".split()
        return [" ".join(words[(i * 7 + j) % len(words)] for j in range(8)) for i in range(1000)]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="all-MiniLM-L6-v2")
    p.add_argument("--sizes", default="50000,200000,1000000")
    p.add_argument("--shard-size", type=int, default=50_000)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--max-length", type=int, default=16)
    p.add_argument("--output", default="bench/results/shard_memory.json")
    args = p.parse_args(argv)
    seeds = seed_sentences()
    head = harness.header("shard_memory", args, 1, argv=argv)  # load average at the start
    rows, table = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(s) for s in args.sizes.split(",")]:
            corpus = Path(tmp) / f"corpus-{n}.txt"
            write_corpus(corpus, n, seeds)
            cmd = [sys.executable, "-c", WORKER, "encode", "--model", args.model, "--input", str(corpus)]
            cmd += ["--output", str(Path(tmp) / f"shards-{n}"), "--shard-size", str(args.shard_size)]
            cmd += ["--batch-size", str(args.batch_size), "--max-length", str(args.max_length)]
            start = time.perf_counter()
            done = subprocess.run(cmd, env=worker_env(ROOT), capture_output=True, text=True, check=False)
            wall = time.perf_counter() - start
            if done.returncode != 0:
                raise RuntimeError(f"encode of {n} lines failed:\n{done.stderr[-3000:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            row = {"lines": n, "peak_rss_mb": result["peak_rss_mb"], "wall_s": wall, "lines_per_s": n / wall}
            rows.append(row)
            table.append([n, row["peak_rss_mb"], wall, row["lines_per_s"]])
            print(f"{n} lines: peak {row['peak_rss_mb']:.0f} MiB in {wall:.0f}s", file=sys.stderr)
            corpus.unlink()
    print(format_table(["lines", "peak RSS MiB", "wall s", "lines/s"], table))
    payload = {
        **head,
        "model": args.model,
        "shard_size": args.shard_size,
        "max_length": args.max_length,
        "rows": rows,
    }
    write_json(args.output, payload)
    return payload


if __name__ == "__main__":
    main()
