"""Where a served request's CPU time goes: py-spy samples of ``bench.serve_load`` (the service and its clients).

py-spy (``pip install py-spy``; any interpreter's copy works) records the benchmark and its child, the
service, per thread, while ``bench.serve_load`` runs with the options after ``--``. Each sample's stack is put in
one bucket by the first rule that matches it (``THREADS``, ``LOOP``: the service's encode thread in the forward
pass or in tokenising, its token-counting thread, its event loop counting a small request's tokens, answering
HTTP, serialising JSON; the benchmark's in-process encode and its HTTP clients; start-up), and the result is
the samples per bucket and their share of the serving samples. py-spy samples running threads only
(``--idle`` off), so the buckets are CPU time.

    python -m bench.serve_profile --py-spy .venv-peer/bin/py-spy -- --rounds 1 --requests 300
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import format_table, write_json

# the service's samples: its threads first, then the event loop's samples by their leaf-most frame that
# names one of these (bucket, substrings of a frame)
THREADS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    (
        "sentcl-encode",
        ("SentenceEncoder.forward", "packed_encode"),  # the padded forward, the packed one on ids
        "service encode thread: forward pass",
    ),
    ("sentcl-encode", ("",), "service encode thread: tokenise, sort, pool"),
    ("sentcl-count", ("",), "service counting thread: tokenise to count"),
    ("MainThread", ("Service._token_ids",), "service loop: tokenise to count (small requests)"),
)
LOOP: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("service loop: JSON out", ("json/encoder", "json/__init__", "orjson")),
    ("service loop: request parsing and validation", ("pydantic", "json/decoder")),
    ("service loop: routes, checks, batcher (sentcl)", ("sentcl/serve/",)),
    ("service loop: HTTP (uvicorn, h11, starlette, fastapi)", ("uvicorn/", "h11", "starlette/", "fastapi/")),
    ("service loop: asyncio, selectors", ("asyncio/", "selectors")),
)
SERVICE = "sentcl.cli serve"  # in the service process's frame (its command line)


def bucket(stack: str) -> str:
    frames = stack.split(";")
    if not any(SERVICE in f for f in frames[:2]):  # the benchmark's process (py-spy: parent first)
        if "in_process (bench/serve_load.py" in stack:
            return "bench: in-process encode"
        if "drive" in stack or "asyncio" in stack:
            return "bench: HTTP clients (httpx, JSON parsing)"
        return "bench: start-up and the rest"
    if stack.count("<module> (") > 1 or "load_model" in stack:  # an import below the main module, the load
        return "service start-up (imports, model load)"
    for thread, needles, name in THREADS:
        if thread in stack and any(needle in stack for needle in needles):
            return name
    for frame in reversed(frames):
        hit = next((name for name, keys in LOOP if any(k in frame for k in keys)), None)
        if hit is not None:
            return hit
    return "service: other"


def aggregate(raw: str) -> dict[str, Any]:
    """py-spy's raw output (``stack count`` lines) as samples per bucket and shares of the serving samples."""
    counts: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, n = line.rstrip().rpartition(" ")
        if stack and n.isdigit():
            counts[bucket(stack)] += int(n)
    serving = {k: v for k, v in counts.items() if "start-up" not in k and "in-process" not in k}
    total = sum(serving.values()) or 1
    return {
        "samples": dict(counts.most_common()),
        "serving_share": {k: round(v / total, 4) for k, v in sorted(serving.items(), key=lambda kv: -kv[1])},
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args_in = sys.argv[1:] if argv is None else argv
    ours, load = (
        (args_in[: args_in.index("--")], args_in[args_in.index("--") + 1 :])
        if "--" in args_in
        else (args_in, [])
    )
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--py-spy", default="py-spy", help="the py-spy executable")
    p.add_argument("--rate", type=int, default=40, help="samples per second")
    p.add_argument("--output", default="bench/results/serve_profile.json")
    args = p.parse_args(ours)
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.txt"
        load_out = Path(tmp) / "serve_load.json"
        cmd = [args.py_spy, "record", "--subprocesses", "--threads", "--nonblocking", "-r", str(args.rate)]
        cmd += ["-f", "raw", "-o", str(raw), "--", sys.executable, "-m", "bench.serve_load", *load]
        subprocess.run([*cmd, "--output", str(load_out)], check=True)
        res = aggregate(raw.read_text(encoding="utf-8"))
        res["serve_load"] = json.loads(load_out.read_text(encoding="utf-8"))["summary"]
    res = {
        "benchmark": "serve_profile",
        "command": "python -m bench.serve_profile " + " ".join(args_in),
        **res,
    }
    rows = [[k, v, res["serving_share"].get(k, "-")] for k, v in res["samples"].items()]
    print(format_table(["bucket", "samples", "share of serving"], rows))
    print("wrote", write_json(args.output, res))
    return res


if __name__ == "__main__":
    main()
