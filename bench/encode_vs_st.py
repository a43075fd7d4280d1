"""Encode speed: sentcl vs sentence-transformers on mixed-length sentences, and sentcl's int8 mode.

Both encode the same sentences with mean pooling, the same truncation, batch size and thread count; the
embeddings are compared (L2-normalised: the peer's all-MiniLM-L6-v2 pipeline ends in a Normalize module).
The sentences are split into chunks and the modes alternate per chunk (rotating who goes first); the
speed is the median over chunks. With ``--sts`` the seven-task STS average of each sentcl mode is scored.

ONNX modes: ``sentcl-onnx`` / ``sentcl-onnx-int8`` export the model first (``sentcl.interop.onnx``; export
time not counted) and run it with onnxruntime (intra-op threads = ``--threads``); ``st-onnx`` is
sentence-transformers' own ``backend="onnx"`` (needs ``optimum-onnx``, which requires transformers<4.58).
With ``--peer-python .venv-peer/bin/python`` (``make bench-peer-venv``) ``st-onnx`` runs in that interpreter
as a persistent worker (``bench/st_peer.py``) fed chunk by chunk; its time is that of the encode call,
measured in the worker; ST's ONNX export on first load happens before timing. Without it, ``st-onnx`` runs
in this process if optimum is importable here and is skipped with the reason otherwise.

    python -m bench.encode_vs_st --sentences 20000 --sts          # from the repository root
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench import harness
from bench.common import (
    format_table,
    matmul_peak,
    median,
    read_sentences,
    set_threads,
)
from sentcl.evaluation.runner import evaluate
from sentcl.files.paths import data_file, resolve_data_dir, resolve_model_path
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.quantize import quantize_int8

DEFAULT_MODES = ["sentcl", "st", "sentcl-int8", "sentcl-bf16", "sentcl-onnx", "sentcl-onnx-int8", "st-onnx"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = harness.parser(__doc__, "encode_vs_st", corpus=False, max_length=128, seed=0, worker=None)
    parser.add_argument("--modes", default=",".join(DEFAULT_MODES))
    parser.add_argument("--sentences", type=int, default=20000)
    parser.add_argument(
        "--chunks", type=int, default=5, help="alternation rounds (the sentences split evenly)"
    )
    parser.add_argument("--sts", action="store_true", help="also score the seven STS tasks per sentcl mode")
    parser.add_argument("--force-bf16", action="store_true")
    parser.add_argument(
        "--peer-python",
        default=None,
        help="interpreter that runs st-onnx (sentence-transformers + optimum-onnx; make bench-peer-venv)",
    )
    return parser.parse_args(argv)


def mixed_sentences(data_dir: Path, count: int, seed: int) -> list[str]:
    """Wikipedia lines (long) and STS-B sentences (short), shuffled: ``count`` of them."""
    pool = read_sentences(data_file(data_dir, "corpora", "wiki1m_prefix.txt"))
    for split in ("train", "dev", "test"):
        with open(
            data_file(data_dir, "senteval", "STS", "STSBenchmark", f"sts-{split}.csv"), encoding="utf-8"
        ) as f:
            for line in f:
                cols = line.rstrip("\n").split("\t")
                pool += [c.strip() for c in cols[5:7] if c.strip()]
    random.Random(seed).shuffle(pool)
    if len(pool) < count:
        pool = (pool * (count // len(pool) + 1))[:count]
    return pool[:count]


class Encoders:
    """Each mode's ``encode(sentences) -> (N, D) normalised float32``."""

    def __init__(self, model: str, batch_size: int, max_length: int, peer_python: str | None = None) -> None:
        self.sentcl = SentenceEncoder.from_pretrained(resolve_model_path(model), pooler="avg").eval()
        self.batch_size, self.max_length = batch_size, min(max_length, self.sentcl.max_length)
        self.int8: SentenceEncoder | None = None
        self.st: Any = None
        self.model, self.peer_python, self.peers = model, peer_python, []
        self.onnx: dict[str, Any] = {}
        self.onnx_dir = tempfile.TemporaryDirectory(prefix="sentcl-bench-onnx-")

    def onnx_encoder(self, int8: bool) -> Any:
        from sentcl.interop.onnx import OnnxEncoder, export_onnx

        key = "int8" if int8 else "fp32"
        if key not in self.onnx:
            folder = export_onnx(self.sentcl, Path(self.onnx_dir.name) / key, int8=int8)
            self.onnx[key] = OnnxEncoder(folder, threads=torch.get_num_threads())
        return self.onnx[key]

    def get(self, mode: str):  # noqa: ANN201 - a callable
        if mode == "sentcl":
            return lambda s: self.sentcl.encode(
                s, self.batch_size, normalize=True, max_length=self.max_length
            )
        if mode == "sentcl-int8":
            self.int8 = self.int8 or quantize_int8(self.sentcl)
            return lambda s: self.int8.encode(s, self.batch_size, normalize=True, max_length=self.max_length)
        if mode == "sentcl-bf16":

            def bf16(s: list[str]) -> np.ndarray:
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    return self.sentcl.encode(s, self.batch_size, normalize=True, max_length=self.max_length)

            return bf16
        if mode == "st":
            from sentence_transformers import SentenceTransformer

            if self.st is None:
                self.st = SentenceTransformer(resolve_model_path(self.model), device="cpu")
                self.st.max_seq_length = self.max_length
            return lambda s: self.st.encode(
                s, batch_size=self.batch_size, convert_to_numpy=True, normalize_embeddings=True
            )
        if mode in ("sentcl-onnx", "sentcl-onnx-int8"):
            onnx = self.onnx_encoder(int8=mode.endswith("int8"))
            return lambda s: onnx.encode(s, self.batch_size, normalize=True, max_length=self.max_length)
        if mode == "st-onnx" and self.peer_python:
            from bench.st_peer import PeerEncoder

            path = str(resolve_model_path(self.model))
            threads = torch.get_num_threads()
            peer = PeerEncoder(self.peer_python, path, "onnx", self.batch_size, self.max_length, threads)
            self.peers.append(peer)
            return peer
        if mode == "st-onnx":
            from sentence_transformers import SentenceTransformer

            st_onnx = SentenceTransformer(resolve_model_path(self.model), device="cpu", backend="onnx")
            st_onnx.max_seq_length = self.max_length
            return lambda s: st_onnx.encode(
                s, batch_size=self.batch_size, convert_to_numpy=True, normalize_embeddings=True
            )
        raise ValueError(f"unknown mode {mode!r}; valid: {', '.join(DEFAULT_MODES)}")


def st_onnx_missing() -> str | None:
    """Why sentence-transformers' ONNX backend cannot run here, or None."""
    try:
        import optimum.onnxruntime  # noqa: F401
    except ImportError as err:
        return (
            f"sentence-transformers' backend='onnx' needs optimum-onnx ({err}); its release requires "
            "transformers<4.58, which would replace this environment's transformers 5: run it in a peer "
            "interpreter with --peer-python .venv-peer/bin/python (make bench-peer-venv)"
        )
    return None


def run(args: argparse.Namespace) -> dict[str, Any]:
    set_threads(args.threads)
    head = harness.header("encode_vs_st", args, args.threads)  # the machine and its load at the start
    data_dir = resolve_data_dir(args.data_dir)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    skipped: dict[str, str] = {}
    fp32, bf16 = matmul_peak(torch.float32, sizes=(1024,), repeat=1), matmul_peak(torch.bfloat16, (512,), 1)
    if "sentcl-bf16" in modes and bf16 < 0.5 * fp32 and not args.force_bf16:
        skipped["sentcl-bf16"] = (
            f"no native bf16 matmul: {bf16 / 1e9:.1f} vs {fp32 / 1e9:.1f} GFLOP/s in fp32"
        )
    if "st-onnx" in modes and not args.peer_python and (why := st_onnx_missing()):
        skipped["st-onnx"] = why
    modes = [m for m in modes if m not in skipped]
    sentences = mixed_sentences(data_dir, args.sentences, args.seed)
    encoders = Encoders(args.model, args.batch_size, args.max_length, args.peer_python)
    try:
        return _measure(args, head, modes, skipped, (fp32, bf16), sentences, encoders, data_dir)
    finally:
        for peer in encoders.peers:
            peer.close()


def _measure(
    args: argparse.Namespace,
    head: dict[str, Any],
    modes: list[str],
    skipped: dict[str, str],
    peaks: tuple[float, float],
    sentences: list[str],
    encoders: Encoders,
    data_dir: Path,
) -> dict[str, Any]:
    fp32, bf16 = peaks
    fns = {m: encoders.get(m) for m in modes}
    for m in modes:
        fns[m](sentences[: args.batch_size])  # warm-up: first-call allocations, quantised kernels
    bounds = np.linspace(0, len(sentences), args.chunks + 1).astype(int)
    rates: dict[str, list[float]] = {m: [] for m in modes}
    seconds: dict[str, float] = dict.fromkeys(modes, 0.0)
    outputs: dict[str, list[np.ndarray]] = {m: [] for m in modes}
    for c in range(args.chunks):
        chunk = sentences[bounds[c] : bounds[c + 1]]
        for mode in modes[c % len(modes) :] + modes[: c % len(modes)]:
            start = time.perf_counter()
            outputs[mode].append(np.asarray(fns[mode](chunk), dtype=np.float32))
            # a peer worker reports the time of its own encode call (no pipe transfer)
            elapsed = getattr(fns[mode], "last_seconds", None) or time.perf_counter() - start
            rates[mode].append(len(chunk) / elapsed)
            seconds[mode] += elapsed
        print(f"chunk {c + 1}/{args.chunks}: " + ", ".join(f"{m} {rates[m][-1]:.0f}/s" for m in modes))
    emb = {m: np.concatenate(outputs[m]) for m in modes}
    result: dict[str, Any] = {}
    for mode in modes:
        row: dict[str, Any] = {
            "sentences_per_s": median(rates[mode]),
            "sentences_per_s_total": len(sentences) / seconds[mode],
            "chunk_rates": rates[mode],
        }
        if "st" in emb and mode != "st":
            row["max_abs_diff_vs_st"] = float(np.abs(emb[mode] - emb["st"]).max())
        if "sentcl" in emb and mode != "sentcl":
            row["max_abs_diff_vs_sentcl"] = float(np.abs(emb[mode] - emb["sentcl"]).max())
            cos = (emb[mode] * emb["sentcl"]).sum(axis=1)
            row["cos_to_sentcl_fp32"] = {"mean": float(cos.mean()), "min": float(cos.min())}
        result[mode] = row
    if args.sts:
        for mode in [m for m in modes if m.startswith("sentcl")]:
            scores = evaluate(fns[mode], data_dir, ["sts"])["sts"]
            result[mode]["sts_avg"] = float(scores["avg"])
    ratios = {
        m: result[m]["sentences_per_s"] / result["st"]["sentences_per_s"] for m in modes if "st" in result
    }
    return {
        **head,
        "config": {**head["config"], "max_length": encoders.max_length},
        "matmul_peak_flop_s": {"fp32": fp32, "bf16": bf16},
        "sentence_tokens_mean": float(
            np.mean(
                [
                    len(t)
                    for t in encoders.sentcl.tokenizer(
                        sentences, truncation=True, max_length=args.max_length
                    )["input_ids"]
                ]
            )
        ),
        "modes": result,
        "skipped": skipped,
        "peer_versions": {m: fn.versions for m, fn in fns.items() if hasattr(fn, "versions")},
        "speed_vs_st": ratios,
        "targets": _targets(result, ratios),
    }


def _targets(result: dict[str, Any], ratios: dict[str, float]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "sentcl" in ratios:
        out["sentcl_encode>=st"] = ratios["sentcl"] >= 1.0
        out["sentcl_outputs_equal_st_1e-5"] = result["sentcl"].get("max_abs_diff_vs_st", 1.0) <= 1e-5
    if "sentcl-int8" in ratios:
        out["int8>=1.5x_st"] = ratios["sentcl-int8"] >= 1.5
    if "sentcl-onnx" in ratios:
        out["onnx_fp32>=1.5x_st"] = ratios["sentcl-onnx"] >= 1.5
        out["onnx_fp32_max_abs_diff_vs_st"] = result["sentcl-onnx"].get("max_abs_diff_vs_st")
        if "st-onnx" in ratios:
            out["onnx_fp32>=1.0x_st_onnx"] = ratios["sentcl-onnx"] >= ratios["st-onnx"]
    if "sentcl-onnx-int8" in ratios:
        out["onnx_int8>=2.5x_st"] = ratios["sentcl-onnx-int8"] >= 2.5
    if "sts_avg" in result.get("sentcl-onnx-int8", {}) and "sts_avg" in result.get("sentcl", {}):
        gap = result["sentcl-onnx-int8"]["sts_avg"] - result["sentcl"]["sts_avg"]
        out["onnx_int8_sts_avg_gap"] = gap
        out["onnx_int8_sts_avg_within_0.5"] = abs(gap) <= 0.5
    if "sts_avg" in result.get("sentcl-int8", {}) and "sts_avg" in result.get("sentcl", {}):
        gap = result["sentcl-int8"]["sts_avg"] - result["sentcl"]["sts_avg"]
        out["int8_sts_avg_gap"] = gap
        out["int8_sts_avg_within_0.5"] = abs(gap) <= 0.5
    return out


def report(res: dict[str, Any]) -> str:
    rows = [
        [
            mode,
            row["sentences_per_s"],
            res["speed_vs_st"].get(mode, float("nan")),
            row.get("max_abs_diff_vs_st", "-"),
            row.get("max_abs_diff_vs_sentcl", "-"),
            row.get("cos_to_sentcl_fp32", {}).get("mean", "-"),
            row.get("sts_avg", "-"),
        ]
        for mode, row in res["modes"].items()
    ]
    headers = [
        "mode",
        "encode sent/s",
        "speed vs st",
        "max |Δ| vs st",
        "max |Δ| vs sentcl",
        "mean cos to fp32",
        "STS avg (7)",
    ]
    lines = [format_table(headers, rows)]
    lines += [f"skipped {m}: {why}" for m, why in res["skipped"].items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return harness.main(argv, parse_args, run, report)


if __name__ == "__main__":
    main()
