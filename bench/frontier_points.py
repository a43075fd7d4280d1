"""The points of ``bench.frontier``: each a model folder and a timed ``encode``, sentcl's own or a peer's.

A :class:`Point` hides where its model runs (this process, or ``bench/st_peer.py`` under the peers'
interpreter) behind ``encode_timed(sentences) -> (seconds, (N, D) vectors)`` and ``eval_encode_fn()`` (what
``sentcl.evaluation`` scores). :func:`reference_sts` reads the committed STS averages that the points whose
trained weights are not kept reuse.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import ROOT
from bench.st_peer import PeerEncoder
from sentcl.files.paths import resolve_model_path

SENTCL_POINTS = (
    "teacher",
    "teacher-onnx",
    "teacher-onnx-int8",
    "teacher-openvino",
    "l3",
    "l3-onnx-int8",
    "l2",
    "l2-onnx-int8",
)
PEER_BACKENDS = {"st": "torch", "st-onnx": "onnx", "st-openvino": "openvino", "model2vec": "model2vec"}
POINTS = (*SENTCL_POINTS, "l3-pca128", *PEER_BACKENDS)
CUTS = {"l3": [0, 2, 4], "l2": [0, 5], "l3-pca128": [0, 2, 4]}
UNTRAINED = (
    "a cut of the teacher's layers, untrained here (the trained student's weights are not kept): timed only"
)
NOT_SCORED = {
    "l3": UNTRAINED,
    "l2": UNTRAINED,
    "l3-pca128": UNTRAINED,
    "l3-onnx-int8": f"the int8 export of {UNTRAINED}",
    "l2-onnx-int8": f"the int8 export of {UNTRAINED}",
    "teacher-onnx": "the teacher's fp32 weights: its average (the cosines to the teacher are recorded)",
}
GRID = Path("docs/results/distillation-cpu/runs")
# committed STS averages: point -> the grid point whose run summaries hold it (mean over seeds)
GRID_POINTS = {
    "teacher": "teacher-6-layers",
    "l3": "l3-0-2-4-mse",
    "l2": "l2-0-5-mse",
    "l3-pca128": "l3-mse-pca-128",
}
INT8_RESULT = Path("bench/results/distill_speed.json")  # the trained 3-layer student's int8 export, scored
# Model2Vec's distill with its defaults, run by the peers' interpreter: argv[1] teacher folder, argv[2] output
DISTILL = (
    "import sys; from model2vec.distill import distill; distill(sys.argv[1]).save_pretrained(sys.argv[2])"
)


@dataclass
class Point:
    """One frontier point (see the module docstring)."""

    name: str
    family: str  # "sentcl" or "peer"
    runtime: str  # "pytorch", "onnx", "onnx-int8", "static", or the peer's backend
    folder: Path
    encode_timed: Callable[[list[str]], tuple[float, float, np.ndarray]]  # wall s, CPU s, (N, D)
    eval_encode_fn: Callable[[], Callable[[list[str]], np.ndarray]]
    max_length: int
    measure_sts: bool = True
    no_sts_reason: str | None = None
    trained: bool = False  # a layer student from its trained folder (not a cut of the teacher)
    versions: dict[str, str] | None = None  # a peer's packages, as its worker reports them

    def describe(self) -> dict[str, Any]:
        row: dict[str, Any] = {"family": self.family, "runtime": self.runtime, "folder": self.folder.name}
        row |= {"versions": self.versions} if self.versions else {}
        return (
            {**row, "trained_from": str(self.folder)} if self.trained and self.runtime == "pytorch" else row
        )


def reference_sts(root: Path = ROOT) -> dict[str, dict[str, Any]]:
    """Committed seven-task STS averages: the distillation grid's run summaries (mean over seeds) and the
    int8 3-layer student's score in bench/results/distill_speed.json."""
    from sentcl.evaluation.runner import headline

    found: dict[str, dict[str, Any]] = {}
    for point, grid_point in GRID_POINTS.items():
        files = sorted((root / GRID / grid_point).glob("seed-*/results.json"))
        scores = [headline("sts", json.loads(f.read_text(encoding="utf-8"))["results"]["sts"]) for f in files]
        if scores:
            where = f"committed: {GRID / grid_point} (mean of {len(scores)} seed(s))"
            found[point] = {"avg": float(np.mean(scores)), "source": where}
    int8 = root / INT8_RESULT
    if int8.is_file():
        avg = json.loads(int8.read_text(encoding="utf-8")).get("student_int8_sts", {}).get("avg")
        if avg is not None:
            found["l3-onnx-int8"] = {"avg": float(avg), "source": f"committed: {INT8_RESULT} (seed 42)"}
    return found


def sentcl_point(
    name: str, model: Any, folder: Path, runtime: str, batch: int, max_length: int, trained: bool = False
) -> Point:
    """A model that runs in this process (a SentenceEncoder, an OnnxEncoder, a static student); ``trained``:
    a layer student (or its export) from its trained folder, scored here."""
    from sentcl.evaluation.embedding import evaluation_encode_fn

    def encode_timed(sentences: list[str]) -> tuple[float, float, np.ndarray]:
        start, cpu = time.perf_counter(), time.process_time()
        out = model.encode(sentences, batch_size=batch, normalize=True, max_length=max_length)
        return time.perf_counter() - start, time.process_time() - cpu, np.asarray(out)

    return Point(
        name,
        "sentcl",
        runtime,
        folder,
        encode_timed,
        lambda: evaluation_encode_fn(model, batch, max_length),
        max_length,
        measure_sts=trained or name not in NOT_SCORED,
        no_sts_reason=None if trained else NOT_SCORED.get(name),
        trained=trained,
    )


def peer_point(name: str, peer: PeerEncoder, folder: Path, max_length: int) -> Point:
    def encode_timed(sentences: list[str]) -> tuple[float, float, np.ndarray]:
        out = peer(sentences)
        return peer.last_seconds, peer.last_cpu_seconds, out

    # the teacher's weights in fp32: its committed average, the cosines recorded (OpenVINO's bf16: scored)
    same = name in ("st", "st-onnx")
    return Point(
        name,
        "peer",
        PEER_BACKENDS[name],
        folder,
        encode_timed,
        lambda: peer,
        max_length,
        measure_sts=not same,
        versions=peer.versions,
    )


def model2vec_folder(python: str, teacher: Path, cache: Path) -> Path:
    """Model2Vec's ``distill`` of the teacher (its defaults) by ``python``'s Model2Vec, built once per version
    into ``cache`` (never overwritten)."""
    version = subprocess.run(
        [python, "-c", "from importlib.metadata import version; print(version('model2vec'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    out = cache / f"model2vec-{version}-{teacher.name}"
    if not (out / "config.json").is_file():
        cache.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix="model2vec-", dir=cache))
        start = time.perf_counter()
        subprocess.run([python, "-c", DISTILL, str(teacher), str(partial)], check=True)
        print(f"model2vec distill: {time.perf_counter() - start:.0f} s", flush=True)
        partial.rename(out)
    return out


def trained_students(specs: list[str]) -> dict[str, Path]:
    """``--student NAME=FOLDER`` specs: a layer-student point (one of CUTS) run from its trained folder."""
    found: dict[str, Path] = {}
    for spec in specs:
        name, _, folder = spec.partition("=")
        if name not in CUTS or not folder:
            raise ValueError(f"--student {spec!r}: NAME=FOLDER with NAME one of {', '.join(CUTS)}")
        if not Path(folder, "config.json").is_file():
            raise ValueError(f"--student {spec!r}: {folder} has no config.json (a saved model folder)")
        found[name] = Path(folder)
    return found


def layer_student(
    teacher_dir: Path, name: str, work: Path, sentences: list[str], trained: dict[str, Path]
) -> tuple[Any, Path]:
    """A layer-student point's model and folder: its trained folder if given, else cut from the teacher."""
    from sentcl.modeling.encoder import SentenceEncoder

    if name in trained:
        return SentenceEncoder.from_pretrained(str(trained[name])).eval(), trained[name]
    return cut_student(teacher_dir, name, work, sentences)


def cut_student(teacher_dir: Path, name: str, work: Path, sentences: list[str]) -> tuple[Any, Path]:
    """The teacher cut to ``CUTS[name]`` (plus a 128-d PCA layer fitted on ``sentences``), saved in ``work``."""
    from sentcl.modeling.encoder import SentenceEncoder
    from sentcl.modeling.postprocess.pca import fit_pca, raw_vectors
    from sentcl.modeling.student import keep_layers

    student = SentenceEncoder.from_pretrained(str(teacher_dir)).eval()
    keep_layers(student.backbone, CUTS[name], str(teacher_dir))
    if name.endswith("pca128"):
        vectors = raw_vectors(student, sentences)  # (N, D)
        dim = min(128, vectors.shape[1] // 2)  # 128 (a tiny test model: half its width)
        pca = fit_pca(vectors, dim, "the timed sentences")
        student.dense.append(pca.as_dense())
    student.save_pretrained(work / name)
    return student, work / name


@contextmanager
def build_points(
    args: argparse.Namespace, names: list[str], sentences: list[str]
) -> Iterator[dict[str, Point]]:
    """The named points (teacher first) and the ``--static`` students; peers are closed at exit."""
    from sentcl.interop.onnx import OnnxEncoder, export_onnx
    from sentcl.modeling.encoder import SentenceEncoder
    from sentcl.modeling.open import open_model

    unknown = sorted(set(names) - set(POINTS))
    if unknown or "teacher" not in names:
        raise ValueError(
            f"--points: {unknown or 'teacher missing'}; valid: {', '.join(POINTS)} (teacher needed)"
        )
    teacher_dir = Path(resolve_model_path(args.teacher))
    teacher = SentenceEncoder.from_pretrained(str(teacher_dir)).eval()
    ml = min(args.max_length, teacher.max_length)
    points = {"teacher": sentcl_point("teacher", teacher, teacher_dir, "pytorch", args.batch_size, ml)}
    peers: list[PeerEncoder] = []
    with tempfile.TemporaryDirectory(prefix="sentcl-frontier-") as tmp:
        work = Path(tmp)
        models: dict[str, Any] = {"teacher": teacher}
        trained = trained_students(args.student)
        for name in [n for n in names if n in CUTS]:
            models[name], folder = layer_student(teacher_dir, name, work, sentences, trained)
            own = name in trained
            points[name] = sentcl_point(name, models[name], folder, "pytorch", args.batch_size, ml, own)
        for name in [n for n in names if ("-onnx" in n or "-openvino" in n) and n in SENTCL_POINTS]:
            base, int8, ov = name.split("-")[0], name.endswith("int8"), name.endswith("openvino")
            folder = export_onnx(models[base], work / name, int8=int8, openvino=ov)
            runtime = "openvino" if ov else "onnx-int8" if int8 else "onnx"
            onnx = OnnxEncoder(folder, threads=args.threads)
            points[name] = sentcl_point(name, onnx, folder, runtime, args.batch_size, ml, base in trained)
        for spec in args.static:
            label, _, path = spec.partition("=")
            model = open_model(path, threads=args.threads)
            points[label] = sentcl_point(label, model, Path(path), "static", args.batch_size, ml)
        wanted = [n for n in names if n in PEER_BACKENDS]
        python = {
            n: (args.model2vec_python or args.peer_python) if n == "model2vec" else args.peer_python
            for n in wanted
        }
        if any(not python[n] for n in wanted):
            raise ValueError(f"--points {', '.join(wanted)} run under --peer-python (make bench-peer-venv)")
        copy = work / "teacher-copy"  # the peers may write beside a model: never into the installed one
        if wanted:
            shutil.copytree(teacher_dir, copy)
        try:
            for name in wanted:
                source = (
                    model2vec_folder(python[name], copy, Path(args.cache_dir))
                    if name == "model2vec"
                    else copy
                )
                save = work / f"{name}-saved"
                peer = PeerEncoder(
                    python[name],
                    str(source),
                    PEER_BACKENDS[name],
                    args.peer_batch_size,
                    ml,
                    args.threads,
                    str(save),
                )
                peers.append(peer)
                points[name] = peer_point(name, peer, save, ml)
            order = [*names, *(spec.partition("=")[0] for spec in args.static)]  # the order asked for
            yield {name: points[name] for name in order}
        finally:
            for peer in peers:
                peer.close()
