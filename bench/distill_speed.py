"""Encode speed of a distilled student against its teacher, side by side in one run, and size on disk.

Modes: ``teacher`` and ``student`` (PyTorch, sentcl's encode), ``student-onnx-int8`` and ``teacher-onnx-int8``
(``sentcl export --format onnx --int8``'s path, ``sentcl.interop.onnx.export_onnx``, run by onnxruntime with
``--threads`` intra-op threads; export time not counted), and ``student-onnx-int8-before``: the same export
run as sentcl ran it before leaving out ``SLOW_FUSIONS`` and cutting passes at ``ORT_MAX_CELLS`` (only when
``--modes`` names it). Every mode encodes the same sentences (the distinct STS-B test sentences) with batch
``sentcl.defaults.ENCODE_BATCH_SIZE`` and the same thread count, once per round; the rounds alternate the
modes, rotating who goes first, because the machine is shared: the figures are the median sentences/s over
rounds and the median over rounds of each mode's ratio to the teacher's rate in the same round. Sizes: every
file of the model folder (the teacher's installed folder, the student's saved one, each ONNX export), and the
weights file alone.

The student is ``--student FOLDER`` (a trained one), or the teacher's layers ``--student-layers 0,2,4`` cut
here (``model.student_layers``; untrained, but of the same shape, so it runs at the same speed).

    python -m bench.distill_speed --student runs/distill-l3/best          # from the repository root
    python -m bench.distill_speed --student-layers 0,2,4 --rounds 5

``--eval-int8`` also scores the student's int8 export on the seven STS tasks (``sentcl.evaluate``, the one
evaluation path) and ``--table FILE`` writes the side table a grid page shows (sentcl.experiments.targets): the
speed and size rows, and the values its targets read (``student_pytorch_speedup``, ``student_int8_speedup``,
``student_int8_sts_avg``, ...).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench import harness
from bench.common import format_table, median, set_threads
from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.files.paths import resolve_data_dir, resolve_model_path
from sentcl.modeling.encoder import SentenceEncoder

MODES = ("teacher", "student", "student-onnx-int8", "teacher-onnx-int8", "student-onnx-int8-before")
BEFORE = "-before"  # the same export run as OnnxEncoder ran it before SLOW_FUSIONS and ORT_MAX_CELLS
DEFAULT_MODES = tuple(m for m in MODES if not m.endswith(BEFORE))  # what a user measures
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.onnx")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = harness.parser(
        __doc__,
        "distill_speed",
        corpus=False,
        batch_size=ENCODE_BATCH_SIZE,
        max_length=128,
        threads=1,
        worker=None,
    )
    p.add_argument("--teacher", default=harness.DEFAULT_MODEL, help="teacher folder or short name")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--student", default=None, help="a student folder (sentcl or sentence-transformers)")
    group.add_argument("--student-layers", default="0,2,4", help="cut the teacher to these layers")
    p.add_argument(
        "--modes",
        default=",".join(DEFAULT_MODES),
        help=f"comma-separated, of {', '.join(MODES)} (default: all but the -before mode, a record of the old runtime)",
    )
    p.add_argument("--rounds", type=int, default=5, help="alternation rounds, each over every sentence")
    p.add_argument("--sentences", type=int, default=None, help="only the first N STS-B test sentences")
    p.add_argument("--eval-int8", action="store_true", help="score the int8 student on the seven STS tasks")
    p.add_argument("--table", default=None, help="write the grid page's side table (JSON) here")
    args = p.parse_args(argv)
    args.model = args.teacher  # the harness's --model is the teacher
    args.argv = argv  # the command as given (None: the process's own), for the result's "command"
    return args


def stsb_test_sentences(data_dir: Path, limit: int | None = None) -> list[str]:
    """The distinct sentences of STS-B test, in file order."""
    from sentcl.evaluation.senteval_readers import load_sts_task

    pairs = load_sts_task(data_dir, "STSBenchmark", "test")["test"]
    sentences = list(dict.fromkeys(s for a, b, _ in pairs for s in (a, b)))
    return sentences[:limit] if limit else sentences


def folder_size(folder: Path) -> dict[str, int]:
    """Bytes of every file below ``folder``, and of its weights file."""
    files = [f for f in Path(folder).rglob("*") if f.is_file()]
    weights = [f for f in files if f.name in WEIGHT_FILES and f.parent == Path(folder)]
    return {
        "bytes": sum(f.stat().st_size for f in files),
        "weights_bytes": sum(f.stat().st_size for f in weights),
    }


def prepare(args: argparse.Namespace, work: Path, modes: list[str]) -> tuple[dict[str, Any], dict[str, Path]]:
    """Each mode's encoder and the folder it came from (the student cut and saved, the ONNX exports made)."""
    from sentcl.interop.onnx import OnnxEncoder, export_onnx
    from sentcl.modeling.student import keep_layers

    teacher_dir = Path(resolve_model_path(args.teacher))
    teacher = SentenceEncoder.from_pretrained(str(teacher_dir)).eval()
    if args.student:
        student_dir = Path(resolve_model_path(args.student))
        student = SentenceEncoder.from_pretrained(str(student_dir)).eval()
    else:
        student = SentenceEncoder.from_pretrained(str(teacher_dir)).eval()
        keep_layers(student.backbone, [int(i) for i in args.student_layers.split(",")], args.teacher)
        student_dir = work / "student"
        student.save_pretrained(student_dir)
    encoders: dict[str, Any] = {"teacher": teacher, "student": student}
    folders = {"teacher": teacher_dir, "student": student_dir}
    for mode in modes:
        if mode.endswith("-onnx-int8"):
            base = mode.removesuffix("-onnx-int8")
            folders[mode] = export_onnx(encoders[base], work / mode, int8=True)
            encoders[mode] = OnnxEncoder(folders[mode], threads=args.threads)
    for mode in modes:
        if mode.endswith(BEFORE):
            export = mode.removesuffix(BEFORE)
            base = export.removesuffix("-onnx-int8")
            folders[mode] = folders.get(export) or export_onnx(encoders[base], work / export, int8=True)
            encoders[mode] = runtime_before(folders[mode], args.threads)
    return {m: encoders[m] for m in modes}, folders


def runtime_before(folder: Path, threads: int) -> Any:
    """The export's encoder with the session and passes of before: every onnxruntime fusion, and passes of the
    PyTorch encoder's ``MAX_CELLS``."""
    from sentcl.interop.onnx import ONNX_MODEL, OnnxEncoder
    from sentcl.modeling.batching import MAX_CELLS
    from sentcl.modeling.onnx_encoder import _session

    encoder = OnnxEncoder(folder, threads=threads)
    encoder.session = _session(folder / ONNX_MODEL, threads, disabled=())
    encoder.max_cells = MAX_CELLS
    return encoder


def run(args: argparse.Namespace) -> dict[str, Any]:
    set_threads(args.threads)
    head = harness.header("distill_speed", args, args.threads, skip=("argv",), argv=args.argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - set(MODES))
    if unknown or "teacher" not in modes:
        raise ValueError(
            f"--modes: {unknown or 'teacher missing'}; valid: {', '.join(MODES)} (teacher needed)"
        )
    sentences = stsb_test_sentences(resolve_data_dir(args.data_dir), args.sentences)
    with tempfile.TemporaryDirectory(prefix="sentcl-distill-speed-") as tmp:
        encoders, folders = prepare(args, Path(tmp), modes)
        sizes = {m: folder_size(f) for m, f in folders.items()}
        max_length = min(args.max_length, encoders["teacher"].max_length)  # the model's own limit at most
        measured = measure(encoders, sentences, args.batch_size, max_length, args.rounds)
        if args.eval_int8 and "student-onnx-int8" in folders:
            measured["student_int8_sts"] = sts_of(folders["student-onnx-int8"], args)
    config = {**head["config"], "max_length": max_length}
    res = {**head, "config": config, "sentences": len(sentences), "sizes": sizes, **measured}
    if args.table is not None:
        from sentcl.files.atomic import atomic_write_text

        atomic_write_text(args.table, json.dumps(side_table(res), indent=2) + "\n")
        print("wrote", args.table)
    return res


def sts_of(folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The seven STS tasks of a model folder (here the int8 ONNX export) by sentcl's one evaluation path."""
    from sentcl import evaluate
    from sentcl.evaluation.runner import headline
    from sentcl.modeling.open import open_model

    results = evaluate(open_model(str(folder)), tasks=["sts"], data_dir=args.data_dir)
    return {"avg": headline("sts", results["sts"]), "results": results["sts"]}


def side_table(res: dict[str, Any]) -> dict[str, Any]:
    """The grid page's side table (sentcl.experiments.targets): one row per mode, and the targets' values."""
    modes, sizes = res["modes"], res["sizes"]
    rows = [
        [
            mode,
            round(row["sentences_per_s"], 1),
            round(row["speed_vs_teacher"], 2),
            round(sizes[mode]["bytes"] / 2**20, 1),
        ]
        for mode, row in modes.items()
    ]
    values = {
        f"{mode.replace('-onnx-int8', '_int8')}_speedup": round(row["speed_vs_teacher"], 3)
        for mode, row in modes.items()
        if mode != "teacher"
    }
    values = {("student_pytorch_speedup" if k == "student_speedup" else k): v for k, v in values.items()}
    if "student_int8_sts" in res:
        values["student_int8_sts_avg"] = round(res["student_int8_sts"]["avg"], 2)
    machine = res.get("machine", {})
    notes = (
        f"{res['sentences']} distinct STS-B test sentences, batch {res['config']['batch_size']}, "
        f"{res['threads']} thread(s), max length {res['config']['max_length']}; median over "
        f"{res['config']['rounds']} alternating rounds of each mode's rate and of its ratio to the teacher's "
        f"rate in the same round (machine: {machine.get('cpu', 'unknown')}, load average at the start "
        f"{', '.join(f'{x:.1f}' for x in machine.get('loadavg_start', []))})."
    )
    if "student_int8_sts_avg" in values:
        notes += f" The int8 student's seven-task STS average: {values['student_int8_sts_avg']:.2f}."
    return {
        "title": "Encode speed and size against the teacher",
        "columns": ["mode", "sentences/s", "speed vs teacher (PyTorch)", "folder MiB"],
        "rows": rows,
        "values": values,
        "notes": notes,
        "command": res["command"],
    }


def measure(
    encoders: dict[str, Any], sentences: list[str], batch_size: int, max_length: int, rounds: int
) -> dict[str, Any]:
    """Alternating rounds: rates per round, medians, per-round ratios to the teacher, output agreement."""
    modes = list(encoders)
    for mode in modes:  # warm-up: first-call allocations, quantised kernels
        encoders[mode].encode(sentences[:batch_size], batch_size, normalize=True, max_length=max_length)
    rates: dict[str, list[float]] = {m: [] for m in modes}
    outputs: dict[str, np.ndarray] = {}
    for r in range(rounds):
        for mode in modes[r % len(modes) :] + modes[: r % len(modes)]:
            start = time.perf_counter()
            out = encoders[mode].encode(sentences, batch_size, normalize=True, max_length=max_length)
            rates[mode].append(len(sentences) / (time.perf_counter() - start))
            outputs[mode] = np.asarray(out, np.float32)
        print(f"round {r + 1}/{rounds}: " + ", ".join(f"{m} {rates[m][-1]:.0f}/s" for m in modes))
    result: dict[str, Any] = {}
    for mode in modes:
        ratios = [rate / teacher for rate, teacher in zip(rates[mode], rates["teacher"], strict=True)]
        result[mode] = {
            "sentences_per_s": median(rates[mode]),
            "round_rates": rates[mode],
            "speed_vs_teacher": median(ratios),
            "round_ratios": ratios,
        }
        base = mode.removesuffix(BEFORE).removesuffix("-onnx-int8")
        if base != mode and base in outputs:  # the int8 export against its PyTorch model
            cos = (outputs[mode] * outputs[base]).sum(axis=1)  # (N,) both normalised
            result[mode][f"cos_to_{base}"] = {"mean": float(cos.mean()), "min": float(cos.min())}
    return {"modes": result, "threads": torch.get_num_threads()}


def report(res: dict[str, Any]) -> str:
    rows = [
        [
            mode,
            row["sentences_per_s"],
            row["speed_vs_teacher"],
            res["sizes"][mode]["bytes"] / 2**20,
            res["sizes"][mode]["weights_bytes"] / 2**20,
            next((v["mean"] for k, v in row.items() if k.startswith("cos_to_")), "-"),
        ]
        for mode, row in res["modes"].items()
    ]
    headers = ["mode", "encode sent/s", "speed vs teacher", "folder MiB", "weights MiB", "mean cos to fp32"]
    return (
        format_table(headers, rows) + f"\n{res['sentences']} STS-B test sentences, {res['threads']} thread(s)"
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return harness.main(argv, parse_args, run, report)


if __name__ == "__main__":
    main()
