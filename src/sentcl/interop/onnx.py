"""ONNX export of a whole sentcl encoder (backbone, pooler, head) and an onnxruntime encoder with its API.

The graph takes ``input_ids`` and ``attention_mask`` (int64, both (batch, sequence), dynamic axes) and gives
``sentence_embedding`` (batch, dim): the inference embedding of ``SentenceEncoder.encode`` before any
normalisation. ``token_type_ids`` is not an input: sentcl encodes single sentences, whose segment ids are all
0, which is also what BERT-like backbones use when the input is absent. The folder holds ``model.onnx``, the
tokenizer files and ``sentcl_onnx.json`` (pooler, max_length, dim, normalize default, quantisation).

fp32 export: the TorchScript exporter, then onnxruntime's transformer fusions (attention, LayerNorm, GELU)
when the backbone is one it knows. ``int8``: onnxruntime's dynamic quantisation of that graph (int8 weights,
one scale per output channel; activations quantised per batch).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import torch
from torch import Tensor, nn

from sentcl.atomic import atomic_write_text
from sentcl.modeling.onnx_encoder import (  # noqa: F401 - the reading side, re-exported for old imports
    INPUTS,
    ONNX_CONFIG,
    ONNX_MODEL,
    OUTPUT,
    OnnxEncoder,
    is_onnx_folder,
)

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


def _fuse(src: Path, dst: Path, model_type: str, heads: int, hidden: int) -> bool:
    """onnxruntime's transformer fusions; False (and src copied) where the backbone is not one it knows."""
    fusion_type = _ORT_FUSION_TYPES.get(model_type)
    if fusion_type is None:
        logger.warning(
            "onnxruntime has no transformer fusions for model_type %r: exported unfused", model_type
        )
        shutil.copyfile(src, dst)
        return False
    from onnxruntime.transformers.optimizer import optimize_model

    fused = optimize_model(str(src), model_type=fusion_type, num_heads=heads, hidden_size=hidden, opt_level=1)
    fused.save_model_to_file(str(dst))
    return True


def export_onnx(
    model: str | nn.Module, out: str | Path, int8: bool = False, pooler: str | None = None
) -> Path:
    """Write ``out/model.onnx`` (+ tokenizer + sentcl_onnx.json) for a model name/folder or a SentenceEncoder."""
    from sentcl.modeling.dual import DualEncoder
    from sentcl.modeling.open import open_model

    encoder = open_model(model, pooler=pooler, backend="torch") if isinstance(model, str) else model
    if isinstance(encoder, DualEncoder):
        raise ValueError("ONNX export of a two-encoder (Quick-Thoughts) model is not supported")
    if getattr(encoder, "prompt", None) is not None:
        raise ValueError(
            "ONNX export of a prompt model (pooler mask: PromptBERT / SNCSE) is not supported: the graph would "
            "not apply its template; use the PyTorch model"
        )
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not is_onnx_folder(out):
        raise ValueError(f"{out} exists and is not an exported ONNX folder; choose an empty or new folder")
    encoder = encoder.cpu().eval()
    config = encoder.backbone.config
    ids = encoder.tokenizer(["a b c d", "a"], padding=True, return_tensors="pt")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        raw = Path(tmp, "raw.onnx")
        axes = {name: {0: "batch", 1: "sequence"} for name in INPUTS}
        with warnings.catch_warnings(), torch.no_grad(), _eager_attention(encoder.backbone):
            warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer warnings
            torch.onnx.export(
                _Graph(encoder),
                (ids["input_ids"], ids["attention_mask"]),
                str(raw),
                input_names=list(INPUTS),
                output_names=[OUTPUT],
                dynamic_axes={**axes, OUTPUT: {0: "batch"}},
                opset_version=OPSET,
                dynamo=False,
            )
        fused = Path(tmp, "fused.onnx")
        did_fuse = _fuse(raw, fused, config.model_type, config.num_attention_heads, config.hidden_size)
        final = Path(tmp, ONNX_MODEL)
        if int8:
            from onnx import TensorProto
            from onnxruntime.quantization import QuantType, quantize_dynamic

            hint = _DropHint("pre-processing before quantization")  # advice for static quantisation
            logging.getLogger().addFilter(hint)
            try:
                quantize_dynamic(
                    str(fused),
                    str(final),
                    per_channel=True,
                    weight_type=QuantType.QInt8,
                    extra_options={
                        "DefaultTensorType": TensorProto.FLOAT
                    },  # fused ops defeat shape inference
                )
            finally:
                logging.getLogger().removeFilter(hint)
        else:
            shutil.copyfile(fused, final)
        os.replace(final, out / ONNX_MODEL)
    encoder.tokenizer.save_pretrained(out)
    meta = {
        "format": "sentcl-onnx",
        "source": model if isinstance(model, str) else None,
        "pooler": encoder.pooler,
        "head": encoder.uses_head,
        "max_length": encoder.max_length,
        "dim": encoder.embedding_dim,
        "normalize": False,
        "quantization": "int8-dynamic" if int8 else None,
        "inputs": list(INPUTS),
        "output": OUTPUT,
        "opset": OPSET,
        "ort_fusions": did_fuse,
    }
    atomic_write_text(out / ONNX_CONFIG, json.dumps(meta, indent=2) + "\n")
    return out
