"""The CPU frontier in one run: every model point and every peer, timed alternately on the same sentences.

Each point encodes the same sentences (the first ``--sentences`` distinct STS-B test sentences) with batch
``--batch-size`` and one thread (``--threads``), once per round and again until ``--min-seconds`` have passed
(so that a static model's few milliseconds are timed over many calls); the rounds alternate the points,
rotating who goes first, because the machine is shared. The figures are the median sentences/s over rounds
and the median over rounds of each point's ratio to the teacher's PyTorch rate **in the same round**.

Points (``--points``, default all of them; ``--static NAME=FOLDER`` adds a static student):

- sentcl: ``teacher`` (PyTorch), ``teacher-onnx`` and ``teacher-onnx-int8`` (``sentcl.interop.onnx``'s export,
  run by onnxruntime), ``teacher-openvino`` (``sentcl export --format openvino``, run by OpenVINO), the layer
  students ``l3`` and ``l2`` in PyTorch and int8 ONNX, and ``l3-pca128`` (the 3-layer student with a 128-d
  PCA Dense layer). ``--student l3=FOLDER`` runs a layer student from its trained folder (and exports that for
  its int8 point); its STS average is then measured here. A layer student without a trained folder is cut from
  the teacher (``l3`` [0, 2, 4], ``l2`` [0, 5]): a cut runs at the trained student's speed (same shapes), and
  its STS average is the committed one of the distillation grid (docs/results/distillation-cpu/runs, mean over
  seeds; the int8 3-layer student's from bench/results/distill_speed.json); the result says which figure came
  from where.
- peers, run by ``--peer-python`` (``bench/st_peer.py``; sentence-transformers' ONNX and OpenVINO backends
  need transformers<4.58): ``st`` (sentence-transformers, PyTorch), ``st-onnx``, ``st-openvino``, and
  ``model2vec`` (Model2Vec's own ``distill`` of the teacher with its defaults, built once per Model2Vec version
  into ``--cache-dir``). Each peer encodes with its library's own default batch size (``--peer-batch-size`` sets
  one). ``--model2vec-python`` runs the Model2Vec point under another interpreter: ``.venv-peer``'s
  transformers<4.58 holds Model2Vec at 0.9, whose encode averages padding rows into every sentence;
  ``make bench-static-peer-venv`` has Model2Vec 0.10.

Search and service points are not timed here: the run records the rows of the committed ``bench.index_binary``
and ``bench.serve_load`` results it was given (``--search-result``, ``--serve-result``; ``bench.frontier_side``).

STS: the seven-task average (``sentcl.evaluation``'s STS tasks, the one evaluation path) is measured for every
point whose model is not one already scored: the int8 exports, the OpenVINO points (OpenVINO computes in bf16
on a CPU with bf16 instructions), Model2Vec, the static students. A point with the teacher's weights run in
fp32 (``teacher-onnx``, ``st``, ``st-onnx``) takes the teacher's committed average, and the run records the mean and least cosine of its vectors to the teacher's on the timed
sentences, which shows they are the same model. Size: every file of the point's folder. ``cpu_per_wall``:
the CPU seconds a point's process used per second of its timing (near 1: one thread at work).

    python -m bench.frontier --peer-python .venv-peer/bin/python \
        --model2vec-python .venv-static-peer/bin/python --sentences 3000      # from the repository root
    python -m bench.frontier --points teacher,l3,l3-onnx-int8 --rounds 2 --sentences 300
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import harness
from bench.common import format_table, set_threads
from bench.distill_speed import folder_size, stsb_test_sentences
from bench.frontier_points import POINTS, Point, build_points, reference_sts
from bench.frontier_side import SEARCH_RESULTS, SERVE_RESULT, search_points, serve_point
from bench.harness import ROOT
from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.evaluation.speed import alternate_rounds, speed_rows
from sentcl.files.paths import resolve_data_dir

SAME_AS_TEACHER = ("teacher-onnx", "st", "st-onnx")  # fp32 runs of the teacher's weights


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = harness.parser(
        __doc__,
        "frontier",
        corpus=False,
        batch_size=ENCODE_BATCH_SIZE,
        max_length=128,
        threads=1,
        worker=None,
    )
    p.set_defaults(output=None)
    p.add_argument("--teacher", default=harness.DEFAULT_MODEL, help="teacher folder or short name")
    p.add_argument("--points", default=",".join(POINTS), help="comma-separated; valid: " + ", ".join(POINTS))
    p.add_argument("--static", action="append", default=[], metavar="NAME=FOLDER", help="a static student")
    p.add_argument(
        "--student",
        action="append",
        default=[],
        metavar="NAME=FOLDER",
        help="a layer student (l3, l2, l3-pca128) from its trained folder, scored here, not cut from the teacher",
    )
    p.add_argument(
        "--search-result",
        action="append",
        default=None,
        help=f"a committed bench.index_binary result (default: {', '.join(SEARCH_RESULTS)})",
    )
    p.add_argument("--serve-result", default=SERVE_RESULT, help="a committed bench.serve_load result")
    p.add_argument("--peer-python", default=None, help="interpreter of the peers (make bench-peer-venv)")
    p.add_argument(
        "--model2vec-python",
        default=None,
        help="interpreter of the model2vec point (default --peer-python; make bench-static-peer-venv: Model2Vec 0.10)",
    )
    p.add_argument(
        "--peer-batch-size",
        type=int,
        default=0,
        help="the peers' encode batch size (default 0: each library's own default)",
    )
    p.add_argument("--cache-dir", default="runs/frontier-cache", help="Model2Vec's distilled folder, kept")
    p.add_argument("--sentences", type=int, default=1000, help="the first N distinct STS-B test sentences")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--min-seconds", type=float, default=1.0, help="each timing repeats until this long")
    p.add_argument("--no-sts", action="store_true", help="measure no STS average (speed and size only)")
    args = p.parse_args(argv)
    args.model = args.teacher
    args.argv = argv
    args.search_result = args.search_result or list(SEARCH_RESULTS)
    if args.output is None:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M")
        args.output = f"bench/results/frontier/frontier-{stamp}.json"
    return args


def measure(
    points: dict[str, Point], sentences: list[str], rounds: int, min_seconds: float
) -> dict[str, dict[str, Any]]:
    """Alternating rounds (``sentcl.evaluation.speed``): each point's rates and ratios to the teacher's, and
    for a run of the teacher's weights its vectors' cosines to the teacher's."""
    timed = {name: point.encode_timed for name, point in points.items()}
    rates, cpu, outputs = alternate_rounds(
        timed, sentences, rounds, min_seconds, lambda s: print(s, flush=True)
    )
    result = speed_rows(rates, cpu, "teacher")
    for name, row in result.items():
        if name in SAME_AS_TEACHER or name.startswith("teacher-") or name == "st-openvino":
            unit = outputs[name] / np.linalg.norm(outputs[name], axis=1, keepdims=True)  # (N, D)
            ref = outputs["teacher"] / np.linalg.norm(outputs["teacher"], axis=1, keepdims=True)  # (N, D)
            cos = (unit * ref).sum(axis=1)  # (N,)
            row["cos_to_teacher"] = {"mean": float(cos.mean()), "min": float(cos.min())}
    return result


def sts_of(point: Point, data_dir: Path) -> float:
    """The seven-task STS average of a point's model by sentcl's evaluation path."""
    from sentcl.evaluation.runner import evaluate, headline

    return headline("sts", evaluate(point.eval_encode_fn(), data_dir, ["sts"], progress=False)["sts"])


def sts_column(
    points: dict[str, Point], args: argparse.Namespace, data_dir: Path
) -> dict[str, dict[str, Any]]:
    """Each point's STS average and where it came from: measured here, or a committed figure (and which)."""
    committed = reference_sts() if args.teacher == harness.DEFAULT_MODEL else {}
    column: dict[str, dict[str, Any]] = {}
    for name, point in points.items():
        key = "teacher" if name in SAME_AS_TEACHER else name
        if key in committed and not point.trained:
            column[name] = committed[key]
        elif point.measure_sts and not args.no_sts:
            start = time.perf_counter()
            column[name] = {"avg": sts_of(point, data_dir), "source": "measured in this run"}
            column[name]["seconds"] = round(time.perf_counter() - start, 1)
            print(f"STS {name}: {column[name]['avg']:.2f} ({column[name]['seconds']} s)", flush=True)
        else:
            column[name] = {"avg": None, "source": point.no_sts_reason or "not measured (--no-sts)"}
    return column


def run(args: argparse.Namespace) -> dict[str, Any]:
    set_threads(args.threads)
    head = harness.header("frontier", args, args.threads, skip=("argv",), argv=args.argv)
    head["started"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    data_dir = resolve_data_dir(args.data_dir)
    sentences = stsb_test_sentences(data_dir, args.sentences)
    names = [n.strip() for n in args.points.split(",") if n.strip()]
    with build_points(args, names, sentences) as points:
        max_length = min(args.max_length, points["teacher"].max_length)
        sizes = {n: folder_size(p.folder) for n, p in points.items()}
        speeds = measure(points, sentences, args.rounds, args.min_seconds)
        sts = sts_column(points, args, data_dir)
        info = {n: p.describe() for n, p in points.items()}
    rows = {n: {**info[n], **speeds[n], "size": sizes[n], "sts": sts[n]} for n in speeds}
    config = {**head["config"], "max_length": max_length}
    side = {
        "search": search_points(ROOT, args.search_result),
        "service": serve_point(ROOT, args.serve_result),
    }
    return {**head, "config": config, "sentences": len(sentences), "points": rows, **side}


def report(res: dict[str, Any]) -> str:
    rows = [
        [
            name,
            row["sentences_per_s"],
            row["speed_vs_teacher"],
            "-" if row["sts"]["avg"] is None else row["sts"]["avg"],
            row["size"]["bytes"] / 2**20,
        ]
        for name, row in res["points"].items()
    ]
    headers = ["point", "sentences/s", "speed vs teacher", "STS avg", "folder MiB"]
    return format_table(headers, rows) + f"\n{res['sentences']} STS-B test sentences, 1 thread each"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return harness.main(argv, parse_args, run, report)


if __name__ == "__main__":
    main()
