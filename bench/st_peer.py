"""A persistent peer worker: sentence-transformers' own encode, run by another interpreter.

sentence-transformers' ``backend="onnx"`` needs optimum-onnx, whose release requires transformers<4.58,
so it cannot share sentcl's environment (transformers 5). ``bench.encode_vs_st --peer-python PY`` starts
this file under ``PY`` (e.g. ``.venv-peer/bin/python``, from ``make bench-peer-venv``) and feeds it one
chunk at a time, so the peer still alternates with sentcl's modes chunk by chunk in one run.
``bench.frontier`` starts it the same way for sentence-transformers' ``torch``, ``onnx`` and ``openvino``
backends (the last needs optimum-intel and openvino) and for a Model2Vec folder (``--backend model2vec``:
``StaticModel.encode``, no multiprocessing pool); ``--save DIR`` saves the loaded model (its size on disk).

Standard library, numpy, sentence-transformers and model2vec only (no sentcl, no bench.common: the peer interpreter
has neither). Protocol on the pipes, one request at a time:

- start-up: the model is loaded (and, for ``backend="onnx"`` on a folder without ``onnx/model.onnx``,
  exported by optimum: not timed) and one JSON line ``{"ready": true, "versions": {...}}`` is written;
- request: one JSON line ``{"sentences": [...]}`` on stdin (an empty line or EOF ends the worker);
- reply: one JSON line ``{"seconds": S, "cpu_seconds": C, "rows": N, "dim": D}`` then N·D little-endian
  float32 bytes, where S is the time of the ``encode`` call alone, measured here, and C the CPU time the
  worker process spent in it (all its threads: C / S near 1 shows one thread at work).

Anything else the libraries print goes to stderr (stdout carries only the protocol).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

PACKAGES = (
    "sentence-transformers",
    "transformers",
    "torch",
    "optimum",
    "optimum-onnx",
    "onnxruntime",
    "optimum-intel",
    "openvino",
    "model2vec",
    "tokenlearn",
    "tokenizers",
)
BACKENDS = ("onnx", "torch", "openvino", "model2vec")


class Model2VecModel:
    """Model2Vec's ``StaticModel`` behind sentence-transformers' ``encode`` call (one process, no pool)."""

    def __init__(self, folder: str) -> None:
        from model2vec import StaticModel

        self.model = StaticModel.from_pretrained(folder)

    def encode(self, sentences: list[str], batch_size: int | None = None, **_: Any) -> np.ndarray:
        size = {"batch_size": batch_size} if batch_size else {}  # none: Model2Vec's default (1024)
        emb = self.model.encode(sentences, use_multiprocessing=False, **size)  # (N, D)
        return emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)  # (N, D) unit rows

    def save_pretrained(self, folder: str) -> None:
        self.model.save_pretrained(folder)


def versions() -> dict[str, str]:
    found = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def load(model: str, backend: str, max_length: int, threads: int) -> Any:
    if backend == "model2vec":
        return Model2VecModel(model)
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    kwargs: dict[str, Any] = {}
    if backend == "openvino":  # one inference thread, one stream: the bench's one-thread comparison
        config = {"INFERENCE_NUM_THREADS": str(threads), "NUM_STREAMS": "1", "PERFORMANCE_HINT": "LATENCY"}
        kwargs["model_kwargs"] = {"ov_config": config}
    if backend == "onnx":
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads  # as sentcl's OnnxEncoder: --threads, not every core
        kwargs["model_kwargs"] = {"provider": "CPUExecutionProvider", "session_options": options}
    st = SentenceTransformer(model, device="cpu", backend=backend, **kwargs)
    if max_length > 0:  # 0: the model's own
        st.max_seq_length = max_length
    return st


def serve(st: Any, batch_size: int, requests: BinaryIO, replies: BinaryIO) -> None:
    for line in requests:
        if not line.strip():
            break
        sentences = json.loads(line)["sentences"]
        size = {"batch_size": batch_size} if batch_size > 0 else {}  # 0: the library's default
        start, cpu = time.perf_counter(), time.process_time()
        emb = st.encode(sentences, convert_to_numpy=True, normalize_embeddings=True, **size)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        emb = np.ascontiguousarray(emb, dtype="<f4")  # (N, D)
        header = {"seconds": seconds, "cpu_seconds": cpu, "rows": emb.shape[0], "dim": emb.shape[1]}
        replies.write(json.dumps(header).encode() + b"\n" + emb.tobytes())
        replies.flush()


class PeerEncoder:
    """The parent's side: ``encode(sentences) -> (N, D)`` through the worker; ``last_seconds`` is the
    worker's own time of that encode call (pipe transfer and JSON excluded), ``last_cpu_seconds`` its CPU time."""

    def __init__(
        self,
        python: str,
        model: str,
        backend: str,
        batch_size: int,
        max_length: int,
        threads: int,
        save: str | None = None,
    ) -> None:
        if not Path(python).exists():
            raise FileNotFoundError(f"--peer-python {python}: no such interpreter (make bench-peer-venv)")
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(threads)}
        env |= {"RAYON_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "false"}
        env.pop("PYTHONPATH", None)  # the peer's own packages, not this environment's
        cmd = [python, str(Path(__file__).resolve()), "--model", model, "--backend", backend]
        cmd += ["--batch-size", str(batch_size), "--max-length", str(max_length), "--threads", str(threads)]
        cmd += ["--save", save] if save else []
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.last_seconds = self.last_cpu_seconds = 0.0
        self.versions: dict[str, str] = self._read_header()["versions"]

    def _read_header(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            raise RuntimeError(f"the peer worker exited with status {code} (its stderr is above)")
        return json.loads(line)

    def __call__(self, sentences: list[str]) -> np.ndarray:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"sentences": list(sentences)}).encode() + b"\n")
        self.proc.stdin.flush()
        header = self._read_header()
        size = header["rows"] * header["dim"] * 4
        data = self.proc.stdout.read(size)
        if len(data) != size:
            raise RuntimeError(f"the peer worker sent {len(data)} of {size} bytes")
        self.last_seconds = float(header["seconds"])
        self.last_cpu_seconds = float(header.get("cpu_seconds", 0.0))
        return np.frombuffer(data, dtype="<f4").reshape(header["rows"], header["dim"])  # (N, D)

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()  # EOF: the worker's loop ends
            self.proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a sentence-transformers folder")
    parser.add_argument("--backend", default="onnx", choices=BACKENDS)
    parser.add_argument("--batch-size", type=int, default=64, help="0: the library's default")
    parser.add_argument("--max-length", type=int, default=128, help="0: the model's own")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--save", default=None, help="save the loaded model here (its size on disk)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder: the export must not reach the hub
    replies = sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints (progress, warnings) must not corrupt the protocol
    st = load(args.model, args.backend, args.max_length, args.threads)
    if args.save:
        st.save_pretrained(args.save)
    replies.write(json.dumps({"ready": True, "versions": versions()}).encode() + b"\n")
    replies.flush()
    serve(st, args.batch_size, sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()
