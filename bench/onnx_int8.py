"""Which ONNX graph of a student runs fastest at one thread: fp32 and int8 variants of its export, timed alternately.

Every variant is built from the same traced graph with ``sentcl.interop.onnx``'s own steps (``trace_graph``,
``fuse_graph``, ``quantize_graph``) and run by the session sentcl's ``OnnxEncoder`` opens (onnxruntime,
``ORT_ENABLE_ALL`` but ``SLOW_FUSIONS``), on the passes it cuts (at most ``ORT_MAX_CELLS`` padded cells). The
timed work is the graph alone, on the same pre-tokenised, length-sorted sentences for every variant
(tokenising is timed apart, once per round, and the tokenizer call alone, the ids only against every field
it gives, in alternating rounds of its own); the rounds alternate the variants, rotating who goes first,
because the machine is shared: the figures are the median over rounds of each variant's rate and of its ratio to
the student's PyTorch forward (on the PyTorch encoder's passes, ``MAX_CELLS``) in the same round. Each
variant's vectors are compared with PyTorch's (cosine per sentence), and its graph's operator counts are
recorded.

Variants: ``pytorch``; ``fp32-unfused`` (the trace), ``fp32-fused`` (onnxruntime's transformer fusions but
SkipLayerNormalization: the fp32 export); int8 (dynamic quantisation) of the fused graph (``int8-fused``: per
output channel, QInt8 weights), ``int8-fused-per-tensor``, ``int8-fused-quint8``, ``int8-fused-matmul-only``
(the fused Attention left in fp32), ``int8-mha`` (only the attention core fused, MultiHeadAttention), and of the
unfused trace (``int8-unfused``: the int8 export, ``int8-unfused-per-tensor``). The runtime's two choices are
measured against what they replace: ``...-slow-fusions`` runs the graph with onnxruntime's every fusion (its
session SkipLayerNormFusion too; ``fp32-fused-slow-fusions``: the fused file with SkipLayerNormalization),
``...-4096-cells`` on the PyTorch encoder's passes, ``int8-unfused-before`` with both (the session and passes
of the export before them).

    python -m bench.onnx_int8 --student runs/frontier/l3-0-3-5-40k-s42/best --sentences 1000 --rounds 5
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from bench import harness
from bench.common import format_table, median, set_threads
from bench.distill_speed import stsb_test_sentences
from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.files.paths import resolve_data_dir, resolve_model_path
from sentcl.modeling.batching import MAX_CELLS
from sentcl.modeling.onnx_encoder import ORT_MAX_CELLS, SLOW_FUSIONS
from sentcl.modeling.quantize import default_selection


class Variant(NamedTuple):
    """A graph (``base``: ``unfused``, ``fused``, ``fused-skip``, ``mha``), its quantisation options (None:
    fp32), the fusions its session leaves out, and the padded cells a pass holds."""

    base: str
    quant: dict[str, Any] | None
    disabled: tuple[str, ...] = SLOW_FUSIONS
    max_cells: int = ORT_MAX_CELLS


VARIANTS: dict[str, Variant] = {
    "fp32-unfused": Variant("unfused", None),
    "fp32-unfused-4096-cells": Variant("unfused", None, max_cells=MAX_CELLS),
    "fp32-fused": Variant("fused", None),
    "fp32-fused-slow-fusions": Variant("fused-skip", None, disabled=()),
    "int8-fused": Variant("fused", {}),
    "int8-fused-per-tensor": Variant("fused", {"per_channel": False}),
    "int8-fused-quint8": Variant("fused", {"weight_type": "quint8"}),
    "int8-fused-matmul-only": Variant("fused", {"op_types": ["MatMul"]}),
    "int8-mha": Variant("mha", {}),
    "int8-unfused": Variant("unfused", {}),
    "int8-unfused-per-tensor": Variant("unfused", {"per_channel": False}),
    "int8-unfused-reduce-range": Variant("unfused", {"reduce_range": True}),
    "int8-unfused-quint8": Variant("unfused", {"weight_type": "quint8"}),
    "int8-unfused-ffn-out-fp32": Variant("unfused", {"select": default_selection}),
    "int8-unfused-quint8-ffn-out-fp32": Variant(
        "unfused", {"weight_type": "quint8", "select": default_selection}
    ),
    "int8-unfused-slow-fusions": Variant("unfused", {}, disabled=()),
    "int8-unfused-4096-cells": Variant("unfused", {}, max_cells=MAX_CELLS),
    "int8-unfused-before": Variant("unfused", {}, disabled=(), max_cells=MAX_CELLS),
}
OPS_SHOWN = (
    "Attention",
    "QAttention",
    "MultiHeadAttention",
    "MatMul",
    "MatMulInteger",
    "SkipLayerNormalization",
    "LayerNormalization",
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = harness.parser(
        __doc__,
        "onnx_int8",
        corpus=False,
        batch_size=ENCODE_BATCH_SIZE,
        max_length=128,
        threads=1,
        worker=None,
    )
    p.add_argument("--student", required=True, help="the student's folder")
    p.add_argument(
        "--variants", default=",".join(VARIANTS), help="comma-separated; valid: " + ", ".join(VARIANTS)
    )
    p.add_argument("--sentences", type=int, default=1000, help="the first N distinct STS-B test sentences")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    args.model = args.student
    args.argv = argv
    return args


def build_graphs(encoder: Any, work: Path, names: list[str]) -> dict[str, Path]:
    """Each variant's graph file in ``work``, made by sentcl's export steps (the int8 ones once per graph)."""
    from sentcl.interop.onnx import fuse_graph, quantize_graph, trace_graph

    config = encoder.backbone.config
    heads, hidden = config.num_attention_heads, config.hidden_size
    bases = {b: work / f"{b}.onnx" for b in ("unfused", "fused", "fused-skip", "mha")}
    trace_graph(encoder, bases["unfused"])
    fuse_graph(bases["unfused"], bases["fused"], config.model_type, heads, hidden)
    fuse_graph(bases["unfused"], bases["fused-skip"], config.model_type, heads, hidden, skip_layer_norm=True)
    fuse_graph(bases["unfused"], bases["mha"], config.model_type, heads, hidden, multi_head_attention=True)
    graphs: dict[str, Path] = {}
    made: dict[str, Path] = {}  # (base, options) -> its quantised file
    for name in names:
        variant = VARIANTS[name]
        if variant.quant is None:
            graphs[name] = bases[variant.base]
            continue
        key = f"{variant.base}-{sorted(variant.quant.items())}"
        if key not in made:
            made[key] = work / f"{name}.onnx"
            quantize_graph(bases[variant.base], made[key], **variant.quant)
        graphs[name] = made[key]
    return graphs


def op_counts(graph: Path) -> dict[str, int]:
    import onnx

    counts = collections.Counter(node.op_type for node in onnx.load(str(graph)).graph.node)
    return {op: counts.get(op, 0) for op in OPS_SHOWN}


def runners(encoder: Any, graphs: dict[str, Path], feeds: dict[int, list[dict]], threads: int) -> dict:
    """variant -> a function that runs every pass (``feeds[max_cells]``) and returns the (N, D) rows in the
    length-sorted order every plan shares."""
    from sentcl.modeling.onnx_encoder import OUTPUT, _session

    def pytorch() -> np.ndarray:
        with torch.no_grad():
            rows = [
                encoder(**{k: torch.from_numpy(v) for k, v in f.items()}).numpy() for f in feeds[MAX_CELLS]
            ]
        return np.concatenate(rows)  # (N, D)

    def onnx_run(name: str) -> Callable[[], np.ndarray]:
        session = _session(graphs[name], threads, VARIANTS[name].disabled)
        passes = feeds[VARIANTS[name].max_cells]
        return lambda: np.concatenate([session.run([OUTPUT], f)[0] for f in passes])  # (N, D)

    return {"pytorch": pytorch, **{name: onnx_run(name) for name in graphs}}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from sentcl.interop.onnx import INPUTS, _quiet
    from sentcl.modeling.batching import length_sorted_batches, token_ids
    from sentcl.modeling.encoder import SentenceEncoder
    from sentcl.similarity import unit_rows

    set_threads(args.threads)
    head = harness.header("onnx_int8", args, args.threads, skip=("argv",), argv=args.argv)
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    if unknown := sorted(set(names) - set(VARIANTS)):
        raise ValueError(f"--variants: {unknown}; valid: {', '.join(VARIANTS)}")
    encoder = SentenceEncoder.from_pretrained(str(resolve_model_path(args.student))).eval()
    sentences = stsb_test_sentences(resolve_data_dir(args.data_dir), args.sentences)
    max_length = min(args.max_length, encoder.max_length)

    def tokenize(max_cells: int = ORT_MAX_CELLS) -> list[dict[str, np.ndarray]]:
        _, batches = length_sorted_batches(
            encoder.tokenizer, sentences, max_length, args.batch_size, "np", max_cells=max_cells
        )
        return [{k: np.asarray(b[k], dtype=np.int64) for k in INPUTS} for _, b in batches]

    def tokenizer_calls(r: int) -> dict[str, float]:
        """sentences/s of the tokenizer call alone: the ids only (``token_ids``), and every field it gives;
        round ``r`` decides which goes first."""
        rates = {}
        for name in ("ids_only", "all_fields")[:: 1 if r % 2 == 0 else -1]:
            start = time.perf_counter()
            if name == "ids_only":
                token_ids(encoder.tokenizer, sentences, max_length)
            else:
                encoder.tokenizer(sentences, truncation=True, max_length=max_length)
            rates[name] = len(sentences) / (time.perf_counter() - start)
        return rates

    feeds = {cells: tokenize(cells) for cells in {MAX_CELLS, ORT_MAX_CELLS}}
    with tempfile.TemporaryDirectory(prefix="sentcl-onnx-int8-") as tmp, _quiet(False):
        graphs = build_graphs(encoder, Path(tmp), names)
        sizes = {n: g.stat().st_size for n, g in graphs.items()}
        ops = {n: op_counts(g) for n, g in graphs.items()}
        fns = runners(encoder, graphs, feeds, args.threads)
        rates, outputs, tok = alternate(fns, len(sentences), args.rounds, tokenize)
        calls = [tokenizer_calls(r) for r in range(args.rounds)]
    ref = unit_rows(outputs["pytorch"])  # (N, D)
    rows = {}
    for name in fns:
        cos = (unit_rows(outputs[name]) * ref).sum(axis=1)  # (N,)
        ratios = [a / b for a, b in zip(rates[name], rates["pytorch"], strict=True)]
        rows[name] = {
            "sentences_per_s": median(rates[name]),
            "round_rates": rates[name],
            "speed_vs_pytorch": median(ratios),
            "round_ratios": ratios,
            "cos_to_pytorch": {"mean": float(cos.mean()), "min": float(cos.min())},
            "graph_bytes": sizes.get(name),
            "ops": ops.get(name),
        }
    config = {**head["config"], "max_length": max_length}
    return {
        **head,
        "config": config,
        "sentences": len(sentences),
        "tokenize_per_s": median(tok),
        "tokenizer_call_per_s": {k: median([c[k] for c in calls]) for k in calls[0]},
        "tokenizer_call_ratio": median([c["ids_only"] / c["all_fields"] for c in calls]),
        "variants": rows,
    }


def alternate(
    fns: dict[str, Callable[[], np.ndarray]], n: int, rounds: int, tokenize: Callable[[], Any]
) -> tuple[dict[str, list[float]], dict[str, np.ndarray], list[float]]:
    """Rates per round (rotating who goes first), each variant's last rows, and tokenising's rate per round."""
    names = list(fns)
    for name in names:  # warm-up: first-call allocations, quantised kernels
        fns[name]()
    rates: dict[str, list[float]] = {name: [] for name in names}
    outputs: dict[str, np.ndarray] = {}
    tok: list[float] = []
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            outputs[name] = fns[name]()
            rates[name].append(n / (time.perf_counter() - start))
        start = time.perf_counter()
        tokenize()
        tok.append(n / (time.perf_counter() - start))
        print(
            f"round {r + 1}/{rounds}: " + ", ".join(f"{k} {v[-1]:.0f}/s" for k, v in rates.items()),
            flush=True,
        )
    return rates, outputs, tok


def report(res: dict[str, Any]) -> str:
    rows = [
        [
            name,
            row["sentences_per_s"],
            row["speed_vs_pytorch"],
            row["cos_to_pytorch"]["min"],
            "-" if row["graph_bytes"] is None else row["graph_bytes"] / 2**20,
        ]
        for name, row in res["variants"].items()
    ]
    headers = ["variant", "sentences/s (graph only)", "vs PyTorch", "least cosine", "graph MiB"]
    calls = res["tokenizer_call_per_s"]
    return format_table(headers, rows) + (
        f"\ntokenising: {res['tokenize_per_s']:.0f} sentences/s; the tokenizer call alone: ids only "
        f"{calls['ids_only']:.0f}/s, every field {calls['all_fields']:.0f}/s ({res['tokenizer_call_ratio']:.2f}x)"
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return harness.main(argv, parse_args, run, report)


if __name__ == "__main__":
    main()
