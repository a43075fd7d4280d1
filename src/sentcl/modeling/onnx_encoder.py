"""An exported ONNX folder (``sentcl export --format onnx``) run by onnxruntime, with the ``Encoder`` API.

The folder holds ``model.onnx`` (``input_ids`` + ``attention_mask`` -> ``sentence_embedding`` (batch, dim)), the
tokenizer files and ``sentcl_onnx.json``: pooler, ``max_length`` (the inference truncation), ``dim``,
``normalize`` (whether the graph's rows have unit length), ``head``, the quantisation and the ``runtime``:
``onnxruntime`` (the default), or ``openvino`` for ``sentcl export --format openvino``, whose folder also holds
OpenVINO's IR of the graph (``openvino_model.xml`` + ``.bin``), compiled by OpenVINO with its CPU defaults
(its inference precision is bf16 on a CPU with bf16 instructions). onnxruntime runs the graph with every
optimisation of its own but ``SLOW_FUSIONS``, in passes of at most ``ORT_MAX_CELLS`` padded cells. A damaged
graph, or metadata that disagrees with it, is an error naming the file. Writing one is interop/onnx.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from sentcl.config.poolers import POOLERS
from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.files.fingerprint import verify_records
from sentcl.files.paths import ModelFolderError
from sentcl.files.read import read_json
from sentcl.modeling.batching import MAX_CELLS, length_sorted_batches
from sentcl.modeling.tokenizer_checks import check_patterns
from sentcl.modeling.weights import check_tokenizer_files
from sentcl.similarity import cosine_matrix, embedding_matrix, unit_rows, wants_unit_rows

ONNX_CONFIG = "sentcl_onnx.json"
ONNX_MODEL = "model.onnx"
OPENVINO_MODEL = "openvino_model.xml"
RUNTIMES = ("onnxruntime", "openvino")
INPUTS = ("input_ids", "attention_mask")
OUTPUT = "sentence_embedding"
#: onnxruntime's own graph fusions that sentcl's sessions leave out, because their fused CPU kernel runs slower
#: than the ops it replaces: SkipLayerNormalization (a residual Add and LayerNormalization in one op;
#: ``python -m bench.onnx_int8``, bench/results/onnx_int8_session.json).
SLOW_FUSIONS = ("SkipLayerNormFusion",)
#: Padded cells (sentences × the longest one's tokens) in one onnxruntime pass, in place of the PyTorch encoder's
#: ``MAX_CELLS``: measured faster for the fp32 and the int8 graph at one thread (same bench); a pass's
#: feed-forward activations take 3 MiB (512 cells × all-MiniLM-L6-v2's 1,536 values × 4 bytes) instead of 24 MiB.
ORT_MAX_CELLS = 512
#: the longest sentence opened ONNX graphs are tried with when they name no position table (a longer max_length
#: is not checked at open: one pass of it would take long)
PROBE_TOKENS = 1024


def is_onnx_folder(path: str | Path) -> bool:
    return Path(path, ONNX_CONFIG).is_file()


def graph_positions(graph: Path) -> int | None:
    """The rows of the graph's position-embedding table (the most positions it has), None where it names none."""
    try:
        import onnx
    except ImportError:  # onnxruntime alone runs the graph; without onnx the length is tried instead
        return None
    if not graph.is_file():
        return None
    try:
        model = onnx.load(str(graph), load_external_data=False)
    except Exception:  # noqa: BLE001 - a damaged graph: onnxruntime's session has named it already
        return None
    rows = [
        int(t.dims[0])
        for t in model.graph.initializer
        if "position_embeddings" in t.name and len(t.dims) == 2
    ]
    return min(rows) if rows else None


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def read_onnx_meta(folder: Path) -> dict[str, Any]:
    """sentcl_onnx.json, checked key by key (a missing or wrong one names the file)."""
    file = folder / ONNX_CONFIG
    meta = read_json(file, dict, error=ModelFolderError)
    checks = {
        "pooler": (meta.get("pooler") in POOLERS, f"one of {', '.join(POOLERS)}"),
        "max_length": (_positive_int(meta.get("max_length")), "a positive whole number"),
        "dim": (_positive_int(meta.get("dim")), "a positive whole number"),
        "normalize": (isinstance(meta.get("normalize", False), bool), "true or false"),
        "runtime": (meta.get("runtime", "onnxruntime") in RUNTIMES, f"one of {', '.join(RUNTIMES)}"),
    }
    for key, (ok, expected) in checks.items():
        if not ok:
            raise ModelFolderError(f"{file}: {key!r} must be {expected}, got {meta.get(key)!r}")
    return meta


class OnnxEncoder:
    """An exported folder run by onnxruntime: ``encode``, ``similarity``, ``tokenizer``, ``max_length`` (the
    inference truncation), ``embedding_dim``."""

    backend = "onnx"

    def __init__(self, folder: str | Path, threads: int | None = None) -> None:
        from transformers import AutoTokenizer

        from sentcl.files.paths import resolve_model_path

        folder = Path(resolve_model_path(str(folder)))
        if not is_onnx_folder(folder):
            raise FileNotFoundError(
                f"{folder} has no {ONNX_CONFIG}: not an exported ONNX folder "
                "(make one with: sentcl export --format onnx MODEL OUT)"
            )
        self.folder = folder
        self.meta: dict[str, Any] = read_onnx_meta(folder)
        check_tokenizer_files(folder)
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        check_patterns(self.tokenizer, str(folder))
        self.runtime: str = self.meta.get("runtime", "onnxruntime")
        if self.runtime == "openvino":
            self.backend = "openvino"
            self.session: Any = OpenVinoSession(folder / OPENVINO_MODEL, threads)
        else:
            self.session = _session(folder / ONNX_MODEL, threads)
        self.pooler: str = self.meta["pooler"]
        self.max_length: int = int(self.meta["max_length"])
        self.embedding_dim: int = int(self.meta["dim"])
        self.max_cells = MAX_CELLS if self.runtime == "openvino" else ORT_MAX_CELLS  # padded cells per pass
        self._check_dim()
        self._check_max_length()
        if "files" in self.meta:  # after the readers' own checks; an export of an older sentcl records none
            verify_records(folder, self.meta["files"], str(folder / ONNX_CONFIG), "export the model again")

    def _check_dim(self) -> None:
        """The graph's output width equals sentcl_onnx.json's dim (read from the graph, else from one probe)."""
        width = self.session.get_outputs()[0].shape[-1]
        if not isinstance(width, int):
            feed = {name: np.ones((1, 2), dtype=np.int64) for name in INPUTS}
            width = int(self.session.run([OUTPUT], feed)[0].shape[-1])
        if width != self.embedding_dim:
            raise ModelFolderError(
                f"{self.folder / ONNX_CONFIG}: dim {self.embedding_dim} does not match "
                f"{self.folder / ONNX_MODEL}, whose output has {width} values per sentence"
            )

    def _runs(self, length: int) -> bool:
        """Whether the graph takes one sentence of ``length`` tokens."""
        feed = {name: np.ones((1, length), dtype=np.int64) for name in INPUTS}
        try:
            self.session.run([OUTPUT], feed)
        except Exception:  # noqa: BLE001 - onnxruntime's and OpenVINO's own error types: the graph refused it
            return False
        return True

    def _check_max_length(self) -> None:
        """sentcl_onnx.json's max_length within what the graph takes: at most the rows of its position table
        (``graph_positions``), and, where it names none, a sentence of max_length tokens runs (one pass at open,
        up to ``PROBE_TOKENS``). Over it: refused, naming the field and the longest input the graph takes."""
        rows = graph_positions(self.folder / ONNX_MODEL)
        if rows is not None and self.max_length > rows:
            limit = rows if rows > PROBE_TOKENS else self._longest_run(rows + 1)
        elif self.max_length <= PROBE_TOKENS and not self._runs(self.max_length):
            limit = self._longest_run(self.max_length)
        else:
            return
        if limit == 0:
            return  # not even one token runs: not a length problem (encoding names the graph's own error)
        raise ModelFolderError(
            f"{self.folder / ONNX_CONFIG}: max_length {self.max_length} is over the model's position limit "
            f"{limit} (the longest input {self.folder / ONNX_MODEL} takes); set max_length to at most {limit}"
        )

    def _longest_run(self, fails: int) -> int:
        """The longest input below ``fails`` tokens (one that fails) that the graph takes: 0 for none."""
        runs = 0
        while fails - runs > 1:
            mid = (runs + fails) // 2
            runs, fails = (mid, fails) if self._runs(mid) else (runs, mid)
        return runs

    def eval(self) -> OnnxEncoder:  # the PyTorch encoder's calls are no-ops here
        return self

    def to(self, device: Any) -> OnnxEncoder:  # noqa: ARG002
        return self

    def encode(
        self,
        sentences: str | Sequence[str],
        batch_size: int = ENCODE_BATCH_SIZE,
        normalize: bool = False,
        convert_to_numpy: bool = True,
        show_progress: bool = False,
        max_length: int | None = None,
        normalize_embeddings: bool | None = None,
    ) -> np.ndarray | Tensor:
        """Embed in input order; batches are sorted by token count as in ``SentenceEncoder.encode``
        (``normalize_embeddings``: sentence-transformers' name of ``normalize``)."""
        normalize = wants_unit_rows(normalize, normalize_embeddings)
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        single = isinstance(sentences, str)
        texts = [sentences] if single else list(sentences)
        limit = min(max_length or self.max_length, self.max_length)
        _, batches = length_sorted_batches(
            self.tokenizer, texts, limit, batch_size, "np", show_progress, max_cells=self.max_cells
        )
        out = np.empty((len(texts), self.embedding_dim), dtype=np.float32)
        for idx, batch in batches:
            feed = {name: np.asarray(batch[name], dtype=np.int64) for name in INPUTS}
            out[idx] = self.session.run([OUTPUT], feed)[0]  # rows back to input order
        if normalize:
            out = unit_rows(out)  # (N, D)
        result = out[0] if single else out
        return result if convert_to_numpy else torch.from_numpy(result)

    def similarity(self, a: Any, b: Any) -> np.ndarray:
        """Cosine similarity of every a against every b: (len(a), len(b)); strings are encoded first."""
        return cosine_matrix(embedding_matrix(self, a), embedding_matrix(self, b)).numpy()


class OpenVinoSession:
    """OpenVINO's compiled graph behind the two onnxruntime calls the encoder makes (``run``, ``get_outputs``)."""

    def __init__(self, file: Path, threads: int | None) -> None:
        import openvino as ov

        if not file.is_file():
            raise ModelFolderError(f"{file}: missing (OpenVINO's graph); export again with --format openvino")
        config = {"INFERENCE_NUM_THREADS": threads or torch.get_num_threads(), "NUM_STREAMS": 1}
        try:
            self.compiled = ov.Core().compile_model(str(file), "CPU", config)
        except Exception as err:  # noqa: BLE001 - OpenVINO raises RuntimeError for every damaged file
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise ModelFolderError(
                f"{file}: OpenVINO cannot load it ({first}); export again (sentcl export --format openvino MODEL OUT)"
            ) from None
        self.request = self.compiled.create_infer_request()

    def get_outputs(self) -> list[Any]:
        from types import SimpleNamespace

        return [SimpleNamespace(shape=[None])]  # the width is read from one probe (OnnxEncoder._check_dim)

    def run(self, names: list[str], feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        result = self.request.infer(feed)
        return [np.array(result[self.compiled.output(name)], dtype=np.float32) for name in names]  # (B, D)


def _session(
    file: Path, threads: int | None, disabled: Sequence[str] = SLOW_FUSIONS, optimized_to: Path | None = None
) -> Any:
    """onnxruntime's session of ``file``, all its graph optimisations but ``disabled`` (``SLOW_FUSIONS``); a
    missing, truncated or damaged graph is an error naming it. ``optimized_to``: also write the graph the
    session runs there (what its optimisations made of ``file``)."""
    import onnxruntime as ort

    if not file.is_file():
        raise ModelFolderError(f"{file}: missing (the exported graph); export the model again")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or torch.get_num_threads()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if optimized_to is not None:
        options.optimized_model_filepath = str(optimized_to)
    try:
        return ort.InferenceSession(
            str(file), options, providers=["CPUExecutionProvider"], disabled_optimizers=list(disabled)
        )
    except Exception as err:  # noqa: BLE001 - onnxruntime's errors (InvalidProtobuf, Fail, ...) share no base
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ModelFolderError(
            f"{file}: onnxruntime cannot load it ({type(err).__name__}: {first}); it is truncated or damaged, "
            "export the model again (sentcl export --format onnx MODEL OUT)"
        ) from None


def open_onnx(path: str, pooler: str | None, int8: bool, threads: int | None) -> OnnxEncoder:
    """An exported folder as asked: its pooler is fixed by the export, and ``int8`` needs an int8 export."""
    encoder = OnnxEncoder(path, threads=threads)
    if pooler is not None and pooler != encoder.pooler:
        raise ValueError(
            f"{path} was exported with pooler {encoder.pooler!r}; --pooler {pooler} needs a new export "
            f"(sentcl export --format onnx MODEL OUT --pooler {pooler})"
        )
    if int8 and not encoder.meta.get("quantization"):
        raise ValueError(f"{path} is an fp32 export; --int8 with ONNX needs `sentcl export --int8`")
    return encoder
