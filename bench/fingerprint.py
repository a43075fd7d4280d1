"""The cost of a model fingerprint (``sentcl.files.fingerprint.model_fingerprint``): SHA-256 of every byte.

A model-like folder of ``--mb`` MiB (one large weights file plus small config and tokenizer files, random
bytes) is fingerprinted in fresh processes, each timed from the call to its return:

* ``cold``: no sidecar cache entry (``$SENTCL_CACHE`` points at an empty folder), so every byte is hashed;
  the files are in the OS page cache (they were just written), so this is the hashing cost, not a disk's;
* ``warm``: the sidecar cache written by the cold call; only a stat() per file and one JSON read;
* ``touched``: after ``os.utime`` on the weights file (a new mtime, same bytes), hashed again.

    python -m bench.fingerprint --mb 400 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import harness
from bench.common import format_table, worker_env

ROOT = Path(__file__).resolve().parent.parent
WORKER = """
import json, sys, time
from sentcl.files.fingerprint import model_fingerprint
start = time.perf_counter()
digest = model_fingerprint(sys.argv[1])
print(json.dumps({"seconds": time.perf_counter() - start, "digest": digest}))
"""
SMALL_FILES = {"config.json": 700, "tokenizer.json": 700_000, "vocab.txt": 230_000, "sentcl.json": 300}


def make_folder(folder: Path, mb: int, seed: int) -> int:
    """A model-like folder: ``model.safetensors`` of ``mb`` MiB less the small files; returns its bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = __import__("random").Random(seed)
    total = 0
    for name, size in SMALL_FILES.items():
        (folder / name).write_bytes(rng.randbytes(size))
        total += size
    weights = mb * 2**20 - total
    with open(folder / "model.safetensors", "wb") as handle:
        left = weights
        while left:
            block = min(left, 16 * 2**20)
            handle.write(os.urandom(block))
            left -= block
    return total + weights


def timed(folder: Path, cache: Path) -> dict[str, Any]:
    """One fingerprint in a fresh process with ``cache`` as $SENTCL_CACHE."""
    import json

    env = {**worker_env(ROOT), "SENTCL_CACHE": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", WORKER, str(folder)], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(args: argparse.Namespace) -> dict[str, Any]:
    res = harness.header("fingerprint", args, threads=1)
    with tempfile.TemporaryDirectory(dir=args.work_dir) as work:
        folder = Path(work) / "model"
        size = make_folder(folder, args.mb, args.seed)
        times: dict[str, list[float]] = {"cold": [], "warm": [], "touched": []}
        digests = set()
        for i in range(args.repeats):
            cache = Path(work) / f"cache-{i}"
            cold = timed(folder, cache)
            warm = timed(folder, cache)
            st = (folder / "model.safetensors").stat()
            os.utime(folder / "model.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
            touched = timed(folder, cache)
            for key, out in (("cold", cold), ("warm", warm), ("touched", touched)):
                times[key].append(out["seconds"])
                digests.add(out["digest"])
    res["folder_bytes"] = size
    res["files"] = len(SMALL_FILES) + 1
    res["same_digest_every_time"] = len(digests) == 1
    res["seconds"] = {k: {"median": statistics.median(v), "runs": v} for k, v in times.items()}
    res["cold_mb_per_s"] = size / 2**20 / res["seconds"]["cold"]["median"]
    return res


def report(res: dict[str, Any]) -> str:
    rows = [
        [k, f"{v['median']:.4f}", " ".join(f"{t:.4f}" for t in v["runs"])] for k, v in res["seconds"].items()
    ]
    head = f"model fingerprint of {res['folder_bytes'] / 2**20:.0f} MiB in {res['files']} files"
    return f"{head} ({res['cold_mb_per_s']:.0f} MiB/s cold)\n" + format_table(
        ["case", "median s", "runs"], rows
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mb", type=int, default=400, help="Folder size in MiB (default 400).")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work-dir", default=None, help="Where the folder is made (default: the temp folder).")
    p.add_argument("--output", default="bench/results/fingerprint.json")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return harness.main(argv, parse_args, run, report)


if __name__ == "__main__":
    main()
