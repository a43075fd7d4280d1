"""The steps of docs/guides/beyond-one-machine.md, run as the guide writes them, on this machine: each step's
command, the last lines it printed, and its wall time, into bench/results/beyond_one_machine.json (the guide
quotes that file).

* ``ray_encode``: the first ``--lines`` lines of the wiki1m prefix embedded with all-MiniLM-L6-v2 on a local
  Ray, into shards;
* ``two_nodes``: the demo recipe trained by two torchrun launches on 127.0.0.1 (``--nnodes 2``, one process
  each: this machine has 2 cores), ``--max-steps`` steps of ``--batch-size`` a process, no evaluation.

    python -m bench.beyond_one_machine --out runs/beyond
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import harness
from bench.common import _version, write_json
from sentcl.files.paths import data_file, resolve_data_dir

SENTCL = [sys.executable, "-m", "sentcl.cli"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default="runs/beyond")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--max-steps", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--steps", nargs="+", default=["ray_encode", "two_nodes"])
    parser.add_argument("--output", default="bench/results/beyond_one_machine.json")
    return parser.parse_args(argv)


def shown(argv: list[str]) -> str:
    """The command as a user types it (``sentcl`` for ``python -m sentcl.cli``)."""
    text = " ".join(argv).replace(" ".join(SENTCL), "sentcl").replace(sys.executable, "python")
    return text.replace("python -m torch.distributed.run", "torchrun")


def timed(*commands: list[str]) -> dict[str, Any]:
    """Start the commands together, wait for all; their joined output's tail and the wall time."""
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    start = time.perf_counter()
    procs = []
    for argv in commands:
        procs.append(
            subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        )
        time.sleep(1.0)  # the first launch hosts the rendezvous
    outs = [p.communicate()[0] for p in procs]
    seconds = time.perf_counter() - start
    for p, out in zip(procs, outs, strict=True):
        if p.returncode != 0:
            raise SystemExit(f"{shown(p.args)} failed:\n{out[-3000:]}")
    lines = [ln for ln in outs[0].splitlines() if ln.strip() and "it/s]" not in ln]
    return {"commands": [shown(c) for c in commands], "seconds": round(seconds, 1), "output_tail": lines[-8:]}


def ray_encode(args: argparse.Namespace, data: Path, out: Path) -> dict[str, Any]:
    lines = data_file(data, "corpora", "wiki1m_prefix.txt").read_text(encoding="utf-8").splitlines(True)
    corpus = (
        out / "wiki-2k.txt"
    )  # the guide: head -n 2000 $SENTCL_DATA/corpora/wiki1m_prefix.txt > wiki-2k.txt
    corpus.write_text("".join(lines[: args.lines]), encoding="utf-8")
    argv = [*SENTCL, "encode", "--model", "all-MiniLM-L6-v2", "--input", str(corpus)]
    return timed([*argv, "--output", str(out / "wiki-emb"), "--shard-size", "2000", "--engine", "ray"])


def two_nodes(args: argparse.Namespace, data: Path, out: Path) -> dict[str, Any]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    launch = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1"]
    launch += ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "guide"]
    train = ["-m", "sentcl.cli", "train", "--config", "demo", "--set", f"training.output_dir={out / 'run'}"]
    train += [
        "--set",
        f"training.max_steps={args.max_steps}",
        "--set",
        f"training.batch_size={args.batch_size}",
    ]
    train += [
        "--set",
        "training.eval_steps=0",
        "--set",
        "training.save_steps=0",
        "--set",
        "eval.final_tasks=[]",
    ]
    train += ["--set", f"data.data_dir={data}"]
    return timed([*launch, *train], [*launch, *train])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    res: dict[str, Any] = {**harness.header("beyond_one_machine", args, 1, argv=argv), "steps": {}}
    res["machine"]["versions"].update({p: _version(p) for p in ("ray", "pyarrow")})
    data, out = resolve_data_dir(args.data_dir), Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for step in args.steps:
        res["steps"][step] = {"ray_encode": ray_encode, "two_nodes": two_nodes}[step](args, data, out)
        print(step, res["steps"][step], flush=True)
    res["note"] = (
        "One 2-core machine shared with other agents' jobs (loadavg recorded): times are upper bounds."
    )
    print("wrote", write_json(args.output, res))
    return res


if __name__ == "__main__":
    main()
