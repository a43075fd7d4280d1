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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from sentcl.atomic import atomic_write_text
from sentcl.modeling.batching import length_sorted_batches
from sentcl.paths import resolve_model_path

logger = logging.getLogger(__name__)

ONNX_CONFIG = "sentcl_onnx.json"
ONNX_MODEL = "model.onnx"
INPUTS = ("input_ids", "attention_mask")
OUTPUT = "sentence_embedding"
OPSET = 17
# model_type of transformers -> onnxruntime.transformers.optimizer's model_type (fusions it knows)
_ORT_FUSION_TYPES = {"bert": "bert", "roberta": "bert", "distilbert": "bert", "xlm-roberta": "bert"}


def is_onnx_folder(path: str | Path) -> bool:
    return Path(path, ONNX_CONFIG).is_file()


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
    from sentcl.modeling.dual import DualEncoder, load_encoder

    encoder = load_encoder(model, pooler=pooler) if isinstance(model, str) else model
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
        "max_length": encoder.inference_max_length,
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


class OnnxEncoder:
    """An exported folder run by onnxruntime, with SentenceEncoder's inference API (``encode``, ``similarity``,
    ``tokenizer``, ``max_length``, ``embedding_dim``)."""

    backend = "onnx"

    def __init__(self, folder: str | Path, threads: int | None = None) -> None:
        import onnxruntime as ort
        from transformers import AutoTokenizer

        folder = Path(resolve_model_path(str(folder)))
        if not is_onnx_folder(folder):
            raise FileNotFoundError(
                f"{folder} has no {ONNX_CONFIG}: not an exported ONNX folder "
                "(make one with: sentcl export --format onnx MODEL OUT)"
            )
        self.folder = folder
        self.meta: dict[str, Any] = json.loads((folder / ONNX_CONFIG).read_text(encoding="utf-8"))
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or torch.get_num_threads()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(
            str(folder / ONNX_MODEL), options, providers=["CPUExecutionProvider"]
        )
        self.pooler: str = self.meta["pooler"]
        self.max_length: int = int(self.meta["max_length"])
        self.inference_max_length = self.max_length
        self.embedding_dim: int = int(self.meta["dim"])

    def eval(self) -> OnnxEncoder:  # the PyTorch encoder's calls are no-ops here
        return self

    def to(self, device: Any) -> OnnxEncoder:  # noqa: ARG002
        return self

    def encode(
        self,
        sentences: str | Sequence[str],
        batch_size: int = 64,
        normalize: bool = False,
        convert_to_numpy: bool = True,
        show_progress: bool = False,
        max_length: int | None = None,
    ) -> np.ndarray | Tensor:
        """Embed in input order; batches are sorted by token count as in ``SentenceEncoder.encode``."""
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        single = isinstance(sentences, str)
        texts = [sentences] if single else list(sentences)
        limit = min(max_length or self.max_length, self.max_length)
        _, batches = length_sorted_batches(self.tokenizer, texts, limit, batch_size, "np", show_progress)
        out = np.empty((len(texts), self.embedding_dim), dtype=np.float32)
        for idx, batch in batches:
            feed = {name: np.asarray(batch[name], dtype=np.int64) for name in INPUTS}
            out[idx] = self.session.run([OUTPUT], feed)[0]  # rows back to input order
        if normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        result = out[0] if single else out
        return result if convert_to_numpy else torch.from_numpy(result)

    def similarity(self, a: Any, b: Any) -> np.ndarray:
        """Cosine similarity of every a against every b: (len(a), len(b)); strings are encoded first."""
        from sentcl.modeling.encoder import embedding_matrix
        from sentcl.similarity import cosine_matrix

        return cosine_matrix(embedding_matrix(self, a), embedding_matrix(self, b)).numpy()  # type: ignore[arg-type]


def load_onnx_encoder(
    name_or_path: str, backend: str = "auto", pooler: str | None = None, int8: bool = False
) -> OnnxEncoder | None:
    """The OnnxEncoder for ``--backend onnx|auto``; None when ``auto`` meets a PyTorch model.

    ``--backend onnx`` with a PyTorch folder is refused (no hidden export cache): export it first. The pooler
    and the quantisation are part of the graph, so ``--pooler`` / ``--int8`` must agree with the export.
    """
    path = Path(resolve_model_path(name_or_path))
    if not is_onnx_folder(path):
        if backend == "onnx":
            raise ValueError(
                f"--backend onnx: {name_or_path} is not an exported ONNX folder (no {ONNX_CONFIG}); "
                f"export it first: sentcl export --format onnx {name_or_path} OUT"
            )
        return None
    encoder = OnnxEncoder(path)
    if pooler is not None and pooler != encoder.pooler:
        raise ValueError(
            f"{path} was exported with pooler {encoder.pooler!r}; --pooler {pooler} needs a new export "
            f"(sentcl export --format onnx MODEL OUT --pooler {pooler})"
        )
    if int8 and not encoder.meta.get("quantization"):
        raise ValueError(f"{path} is an fp32 export; --int8 with ONNX needs `sentcl export --int8`")
    return encoder
