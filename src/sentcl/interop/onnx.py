"""ONNX export of a whole sentcl encoder (backbone, pooler, head) and an onnxruntime encoder with its API.

The graph takes ``input_ids`` and ``attention_mask`` (int64, both (batch, sequence), dynamic axes) and gives
``sentence_embedding`` (batch, dim): the inference embedding of ``SentenceEncoder.encode`` before any
normalisation. ``token_type_ids`` is not an input: sentcl encodes single sentences, whose segment ids are all
0, which is also what BERT-like backbones use when the input is absent. The folder holds ``model.onnx``, the
tokenizer files and ``sentcl_onnx.json`` (pooler, max_length, dim, normalize default, quantisation).

fp32 export: the TorchScript exporter, then onnxruntime's transformer fusions (attention, LayerNorm, GELU)
when the backbone is one it knows, but SkipLayerNormalization, whose CPU kernel runs slower than the residual
Add and LayerNormalization it replaces (``SLOW_FUSIONS``, which sentcl's sessions leave out too). ``int8``: onnxruntime's dynamic quantisation (int8 weights, one scale per
output channel; activations quantised per batch) of the **unfused** traced graph. Measured at one thread
(``python -m bench.onnx_int8``, bench/results/onnx_int8_variants.json): quantising the fused graph turns its
Attention into QAttention, which runs slower than the weight MatMuls that onnxruntime's own session
optimisations turn into DynamicQuantizeMatMul / MatMulIntegerToFloat beside an unfused fp32 attention; int8
weights with int8 activations and per-output-channel scales are the fast and close choice on that (VNNI) CPU.
On a CPU without VNNI the kernel is chosen otherwise (``int8_setting``: u8 weights, the feed-forward output
projections in fp32), measured on an AVX2-only AMD EPYC (bench/results/onnx_int8_avx2.json); the choice is
the exporting machine's and is recorded in ``sentcl_onnx.json`` (``int8``). The session and the passes that run
it are ``sentcl.modeling.onnx_encoder``'s (bench/results/onnx_int8_session.json).
"""

from __future__ import annotations

import contextlib
import io
import logging
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from sentcl.files.atomic import atomic_write_text, dumps_strict
from sentcl.files.fingerprint import file_records
from sentcl.files.output import Input, claim_folder, model_input, remove_stale_temps, write_folder
from sentcl.modeling.onnx_encoder import (  # noqa: F401 - the reading side, re-exported for old imports
    INPUTS,
    ONNX_CONFIG,
    ONNX_MODEL,
    OPENVINO_MODEL,
    OUTPUT,
    OnnxEncoder,
    is_onnx_folder,
)
from sentcl.modeling.quantize import default_selection

logger = logging.getLogger(__name__)

OPSET = 17
# model_type of transformers -> onnxruntime.transformers.optimizer's model_type (fusions it knows)
_ORT_FUSION_TYPES = {"bert": "bert", "roberta": "bert", "distilbert": "bert", "xlm-roberta": "bert"}


class _Graph(nn.Module):
    """(input_ids, attention_mask) -> the encoder's inference embedding (N, D)."""

    def __init__(self, encoder: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask)


class _DropHint(logging.Filter):
    """Drops one known, irrelevant log message."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


@contextlib.contextmanager
def _eager_attention(backbone: nn.Module) -> Iterator[None]:
    """Trace the explicit softmax(QK^T/sqrt(d) + mask)V attention (not SDPA): the pattern that onnxruntime
    fuses into its Attention op (and QAttention once quantised). Same arithmetic; restored afterwards."""
    before = getattr(backbone.config, "_attn_implementation", None)
    setter = getattr(backbone, "set_attn_implementation", None)
    if before in (None, "eager") or setter is None:
        yield
        return
    setter("eager")
    try:
        yield
    finally:
        setter(before)


def fuse_graph(
    src: Path,
    dst: Path,
    model_type: str,
    heads: int,
    hidden: int,
    multi_head_attention: bool = False,
    skip_layer_norm: bool = False,
) -> bool:
    """onnxruntime's transformer fusions; False (and src copied) where the backbone is not one it knows.
    ``multi_head_attention``: fuse the attention core only (MultiHeadAttention), the Q/K/V MatMuls kept.
    ``skip_layer_norm``: also SkipLayerNormalization, which sentcl's sessions leave out (``SLOW_FUSIONS``)."""
    fusion_type = _ORT_FUSION_TYPES.get(model_type)
    if fusion_type is None:
        logger.warning(
            "onnxruntime has no transformer fusions for model_type %r: exported unfused", model_type
        )
        shutil.copyfile(src, dst)
        return False
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    options = FusionOptions(fusion_type)
    options.use_multi_head_attention = multi_head_attention
    options.enable_skip_layer_norm = options.enable_bias_skip_layer_norm = skip_layer_norm
    fused = optimize_model(
        str(src),
        model_type=fusion_type,
        num_heads=heads,
        hidden_size=hidden,
        opt_level=1,
        optimization_options=options,
    )
    fused.save_model_to_file(str(dst))
    return True


_PROBE = ["a b c d", "a", "the cat sat on the mat", "b c"]


def _graph_facts(graph: Path, encoder: nn.Module) -> dict[str, bool]:
    """What the written graph computes, measured on probe sentences: ``normalize`` (every row has unit length)
    and ``head`` (its rows equal the encoder's with the MLP head, not without it)."""
    import onnxruntime as ort

    batch = encoder.tokenizer(_PROBE, padding=True, return_tensors="pt")
    feed = {name: batch[name].numpy().astype(np.int64) for name in INPUTS}
    session = ort.InferenceSession(str(graph), providers=["CPUExecutionProvider"])
    rows = session.run([OUTPUT], feed)[0]  # (N, D)
    normalize = bool(np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-4))
    head = False
    if encoder.head is not None:
        inference_setting = encoder.mlp_only_train
        encoder.mlp_only_train = False  # finish() then applies the head, as a graph with the head does
        try:
            with torch.no_grad():
                with_head = encoder.finish(_pooled(encoder, batch)).numpy()  # (N, D)
        finally:
            encoder.mlp_only_train = inference_setting
        head = bool(np.allclose(rows, with_head, atol=1e-4))
    return {"head": head, "normalize": normalize}


def _pooled(encoder: nn.Module, batch: dict[str, Tensor]) -> Tensor:
    """The pooled vectors (N, H) before head and Dense layers, as the encoder's forward computes them."""
    from sentcl.modeling.pooling import NEEDS_ALL_LAYERS, pool

    all_layers = encoder.pooler in NEEDS_ALL_LAYERS
    out = encoder.backbone(
        input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=all_layers
    )
    states = out.hidden_states if all_layers else (out.last_hidden_state,)
    return pool(encoder.pooler, states, batch["attention_mask"])  # (N, H)


@contextlib.contextmanager
def _quiet(verbose: bool) -> Iterator[None]:
    """onnxruntime's and the exporter's log lines (fusion counts, quantisation notes) only with ``-v``."""
    if verbose:
        yield
        return
    import onnxruntime as ort

    root = logging.getLogger()
    level = root.level
    root.setLevel(
        logging.WARNING
    )  # ort's optimizer and quantizer log at INFO on the root and their own loggers
    named = [logging.getLogger(n) for n in ("onnxruntime", "fusion_base", "onnx_model", "onnx_model_bert")]
    levels = [n.level for n in named]
    for one in named:
        one.setLevel(logging.WARNING)
    ort.set_default_logger_severity(3)
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # torch.onnx and ort print some notes to stdout
            yield
    finally:
        root.setLevel(level)
        for one, before in zip(named, levels, strict=True):
            one.setLevel(before)
        ort.set_default_logger_severity(2)


def trace_graph(encoder: nn.Module, raw: Path) -> None:
    """The encoder's fp32 graph as the TorchScript exporter writes it (no fusions): ``raw``."""
    ids = encoder.tokenizer(["a b c d", "a"], padding=True, return_tensors="pt")
    axes = {name: {0: "batch", 1: "sequence"} for name in INPUTS}
    with warnings.catch_warnings(), torch.no_grad(), _eager_attention(encoder.backbone):
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer warnings
        torch.onnx.export(
            _Graph(encoder).eval(),  # a new module trains by default; export would restore that mode
            (ids["input_ids"], ids["attention_mask"]),
            str(raw),
            input_names=list(INPUTS),
            output_names=[OUTPUT],
            dynamic_axes={**axes, OUTPUT: {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,
        )


def quantize_graph(
    src: Path,
    dst: Path,
    per_channel: bool = True,
    weight_type: str = "qint8",
    op_types: list[str] | None = None,
    reduce_range: bool = False,
    select: Callable[[str], bool] | None = None,
) -> None:
    """onnxruntime's dynamic quantisation of ``src`` into ``dst``: ``weight_type`` ``qint8`` or ``quint8``,
    one scale per output channel or per tensor, ``op_types`` (None: every op type it quantises),
    ``reduce_range`` (7-bit weights), ``select`` (the module names whose products are quantised, as
    ``sentcl.modeling.quantize`` selects them; None: every one). ``bench.onnx_int8`` measures the choices."""
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    exclude = [] if select is None else [n for n, module in _product_modules(src) if not select(module)]

    hint = _DropHint("pre-processing before quantization")  # advice for static quantisation
    logging.getLogger().addFilter(hint)
    try:
        quantize_dynamic(
            str(src),
            str(dst),
            per_channel=per_channel,
            weight_type={"qint8": QuantType.QInt8, "quint8": QuantType.QUInt8}[weight_type],
            op_types_to_quantize=op_types,
            reduce_range=reduce_range,
            nodes_to_exclude=exclude,
            extra_options={"DefaultTensorType": TensorProto.FLOAT},  # fused ops defeat shape inference
        )
    finally:
        logging.getLogger().removeFilter(hint)


#: CPU flags of the int8 dot-product instructions (VNNI, AMX) that multiply u8 x s8 without saturating
VNNI_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")


def int8_setting(flags: Sequence[str] | None = None) -> dict[str, Any]:
    """The int8 export's setting for a CPU (``flags``: /proc/cpuinfo's, default this machine's).

    With VNNI (or AMX): u8 activations x s8 weights (U8S8), every weight product quantised. Without it (AVX2
    only, as on many AMD EPYC): onnxruntime's U8S8 kernels multiply with VPMADDUBSW, whose int16 sums
    saturate; u8 weights (U8U8) and the feed-forward output projections in fp32 (their input, the GELU output,
    has the widest channels; ``sentcl.modeling.quantize.default_selection``) keep every sentence's cosine to
    fp32 above 0.99 there (bench/results/onnx_int8_avx2.json, docs/export.md)."""
    from sentcl.training.provenance import cpu_flags

    found = cpu_flags(VNNI_FLAGS) if flags is None else [f for f in flags if f in VNNI_FLAGS]
    if found:
        return {"kernel": "u8s8", "weights": "qint8", "ffn_output": "int8", "cpu_flags": found}
    return {"kernel": "u8u8", "weights": "quint8", "ffn_output": "fp32", "cpu_flags": []}


def _product_modules(graph: Path) -> list[tuple[str, str]]:
    """(node name, module name) of each MatMul and Gemm of a traced graph: the TorchScript exporter names a
    node by its module's path, ``/encoder/backbone/encoder/layer.0/output/dense/MatMul`` ->
    ``encoder.backbone.encoder.layer.0.output.dense``."""
    import onnx

    nodes = onnx.load(str(graph), load_external_data=False).graph.node
    return [
        (n.name, ".".join(n.name.strip("/").split("/")[:-1]))
        for n in nodes
        if n.op_type in ("MatMul", "Gemm")
    ]


def _write_export(
    encoder: nn.Module, folder: Path, int8: bool, source: str | None, work: Path, openvino: bool = False
) -> None:
    """The whole export into ``folder`` (a fresh temporary folder); ``work`` holds the intermediate graphs."""
    config = encoder.backbone.config
    raw, fused = work / "raw.onnx", work / "fused.onnx"
    trace_graph(encoder, raw)
    did_fuse = False
    setting = int8_setting() if int8 else None
    if setting is not None:  # the unfused graph quantises to the faster int8 graph (the module's docstring)
        facts = _graph_facts(raw, encoder)  # measured on the fp32 graph, which int8 approximates
        select = default_selection if setting["ffn_output"] == "fp32" else None
        quantize_graph(raw, folder / ONNX_MODEL, weight_type=setting["weights"], select=select)
    else:
        did_fuse = fuse_graph(raw, fused, config.model_type, config.num_attention_heads, config.hidden_size)
        facts = _graph_facts(fused, encoder)
        shutil.copyfile(fused, folder / ONNX_MODEL)
    if openvino:
        _to_openvino(folder / ONNX_MODEL, folder / OPENVINO_MODEL)
    encoder.tokenizer.save_pretrained(folder)
    meta = {
        "format": "sentcl-onnx",
        "runtime": "openvino" if openvino else "onnxruntime",
        "source": source,
        "pooler": encoder.pooler,
        "head": facts["head"],
        "max_length": encoder.max_length,  # the inference truncation (Encoder.max_length)
        "dim": encoder.embedding_dim,
        "normalize": facts["normalize"],
        "quantization": "int8-dynamic" if int8 else None,
        "int8": setting,  # the kernel chosen for the exporting CPU (int8_setting)
        "inputs": list(INPUTS),
        "output": OUTPUT,
        "opset": OPSET,
        "ort_fusions": did_fuse,
        # every file of the export, so a swapped or damaged model.onnx is refused when it is opened
        "files": file_records(
            folder, [p.name for p in sorted(folder.iterdir()) if p.is_file() and p.name[0] != "."]
        ),
    }
    atomic_write_text(folder / ONNX_CONFIG, dumps_strict(meta) + "\n")


def _to_openvino(onnx_file: Path, xml: Path) -> None:
    """OpenVINO's IR (``xml`` + its ``.bin``) of the fp32 graph, weights kept in fp32 (not compressed to fp16)."""
    import openvino as ov

    ov.save_model(ov.convert_model(str(onnx_file)), str(xml), compress_to_fp16=False)


def export_onnx(
    model: str | nn.Module,
    out: str | Path,
    int8: bool = False,
    pooler: str | None = None,
    verbose: bool = False,
    openvino: bool = False,
    overwrite: bool = False,
) -> Path:
    """Write ``out/model.onnx`` (+ tokenizer + sentcl_onnx.json) for a model name/folder or a SentenceEncoder.

    ``openvino``: also OpenVINO's IR of the graph (``openvino_model.xml`` + ``.bin``, fp32 weights), which the
    folder's encoder then runs with OpenVINO (``runtime`` in sentcl_onnx.json); fp32 only.

    The folder is written whole into a temporary sibling and swapped in (a killed export leaves no partial
    OUT, and its marked temporary is removed by the next export: ``sentcl.files.output``). OUT is new, empty,
    or with ``overwrite`` an earlier export; never another folder, nor the model's own.
    ``verbose``: onnxruntime's own log lines too.
    """
    from sentcl.modeling.dual import DualEncoder
    from sentcl.modeling.open import open_model

    out = Path(out)
    if openvino and int8:
        raise ValueError("--int8 is onnxruntime's quantisation: export for OpenVINO in fp32 (without --int8)")
    if openvino:
        import openvino  # noqa: F401 - the extra's check (the openvino extra), before the export's work
    inputs = export_inputs(model)
    claim_folder(out, "export", "OUT", inputs, replace=True, overwrite=overwrite)
    encoder = (
        open_model(model, pooler=pooler, needs_torch="an ONNX export") if isinstance(model, str) else model
    )
    if isinstance(encoder, DualEncoder):
        raise ValueError("ONNX export of a two-encoder (Quick-Thoughts) model is not supported")
    if encoder.prompt is not None:
        raise ValueError(
            "ONNX export of a prompt model (pooler mask: PromptBERT / SNCSE) is not supported: the graph would "
            "not apply its template; use the PyTorch model"
        )
    encoder = encoder.cpu().eval()
    source = model if isinstance(model, str) else None

    def write(folder: Path) -> None:
        with _quiet(verbose), tempfile.TemporaryDirectory(dir=folder, prefix=".work-") as work:
            _write_export(encoder, folder, int8, source, Path(work), openvino)

    remove_stale_temps(out, logger.warning)  # only temporaries provably of a killed export of OUT
    write_folder(out, "export", write, "OUT", inputs, overwrite=overwrite)
    return out


def export_inputs(model: str | nn.Module) -> list[Input]:
    """The model folder an export reads (a model object or a hub id reads no folder here)."""
    return model_input(model, "MODEL") if isinstance(model, str) else []
