"""A static model: one vector per vocabulary token, a sentence is the mean of its tokens' rows.

The folder is a sentence-transformers folder whose first module is a ``StaticEmbedding`` (sentence-transformers
3 to 6 load it; Model2Vec's models load the same way): ``modules.json``, ``model.safetensors`` holding
``embedding.weight`` (V, D) and ``tokenizer.json`` at the folder's root, and an optional ``Normalize`` module.
sentence-transformers tokenises without special tokens and averages the rows (``nn.EmbeddingBag``, mean);
``StaticEncoder.encode`` computes the same: the tokens of a whole batch as one flat array
(``static_tokens.StaticTokenizer``, the Rust tokenizer's ids, fast for the BERT pipeline) and one EmbeddingBag
sum. A sentence with no token gets the zero vector.

``max_length`` (the inference truncation every ``Encoder`` has) is ``STATIC_MAX_TOKENS`` tokens: a static model
has no position limit, and sentence-transformers truncates nothing, so the two agree below that length.
Writing a folder: ``save_static`` (a new or empty folder only, written whole and swapped in).

The weighted form (``static_weighted``: the mean's weights from a small attention over the rows) is the same
folder plus ``attention_weights.safetensors``, its first module typed ``WEIGHTED_TYPE`` so that a reader of the
one-table form does not take it for a plain mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.files.arrays import first_bad_row
from sentcl.files.atomic import dumps_strict
from sentcl.files.budget import bounded_texts
from sentcl.files.output import Input
from sentcl.files.paths import ModelFolderError
from sentcl.files.read import read_json
from sentcl.modeling.static_tokens import StaticTokenizer, TokenRows
from sentcl.modeling.static_weighted import (
    POOL_TEXTS,
    WEIGHTED_FILE,
    WeightedMean,
    has_weights,
    read_weighted,
    save_weighted,
)
from sentcl.modeling.tokenizer_checks import check_patterns
from sentcl.similarity import cosine_matrix, embedding_matrix, unit_rows, wants_unit_rows

STATIC_MODULE = "StaticEmbedding"
ST_TYPE = "sentence_transformers.models.StaticEmbedding"  # the name sentence-transformers 3 to 6 resolve
#: the weighted form's first module (``sentcl.interop.st_weighted``: sentence-transformers loads it through sentcl)
WEIGHTED_TYPE = "sentcl.interop.st_weighted.WeightedStaticEmbedding"
NORMALIZE_TYPE = "sentence_transformers.models.Normalize"
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
WEIGHT_KEY = "embedding.weight"
#: the inference truncation in tokens (no position limit: a bound for the service's request checks)
STATIC_MAX_TOKENS = 8192


def static_modules(folder: Path) -> list[dict[str, Any]] | None:
    """``modules.json``'s entries when its first module is a StaticEmbedding, else None."""
    file = folder / "modules.json"
    if not file.is_file():
        return None
    modules = read_json(file, list, error=ModelFolderError)
    first = modules[0] if modules and isinstance(modules[0], dict) else {}
    return modules if str(first.get("type", "")).endswith(STATIC_MODULE) else None


def is_static_folder(folder: str | Path) -> bool:
    return static_modules(Path(folder)) is not None


def _check_modules(folder: Path, modules: list[dict[str, Any]]) -> bool:
    """Whether a Normalize module follows; any other module is an error naming modules.json, and so is a
    weights file that the first module's type does not name (or the other way round)."""
    weighted = modules[0].get("type") == WEIGHTED_TYPE
    if weighted != has_weights(folder):
        raise ModelFolderError(
            f"{folder / 'modules.json'}: the first module is {modules[0].get('type')!r} but "
            f"{WEIGHTED_FILE} is {'missing' if weighted else 'present'}: the weighted form needs both "
            f"({WEIGHTED_TYPE} and the file), the one-table form neither"
        )
    normalize = False
    for entry in modules[1:]:
        kind = str(entry.get("type", "")) if isinstance(entry, dict) else ""
        if not kind.endswith("Normalize"):
            raise ModelFolderError(
                f"{folder / 'modules.json'}: a static model here is StaticEmbedding [+ Normalize]; "
                f"cannot read the module {kind or entry!r}"
            )
        normalize = True
    if modules[0].get("path", "") not in ("", "."):
        raise ModelFolderError(f"{folder / 'modules.json'}: the StaticEmbedding module must be at the root")
    return normalize


def _read_table(folder: Path) -> np.ndarray:
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    file = folder / WEIGHTS_FILE
    if not file.is_file():
        raise ModelFolderError(f"{file}: missing (the StaticEmbedding's token vectors)")
    try:
        weights = load_file(str(file))
    except (SafetensorError, OSError) as err:
        raise ModelFolderError(f"{file}: cannot be read as safetensors: {err}") from err
    table = weights.get(WEIGHT_KEY)
    if table is None or table.ndim != 2:
        raise ModelFolderError(f"{file}: no 2-D {WEIGHT_KEY!r} tensor (keys: {', '.join(weights)})")
    table = np.ascontiguousarray(table, dtype=np.float32)  # (V, D)
    if not np.isfinite(table).all():
        raise ModelFolderError(f"{file}: {WEIGHT_KEY!r} holds NaN or inf")
    if table.shape[1] == 0 or len(table) == 0:
        raise ModelFolderError(
            f"{file}: {WEIGHT_KEY!r} has shape {tuple(table.shape)}: no vectors to embed with"
        )
    if not table.any():
        raise ModelFolderError(
            f"{file}: {WEIGHT_KEY!r} is all zeros: every sentence would get the zero vector"
        )
    return table


def load_tokenizer(file: Path) -> Any:  # noqa: ANN401 - a tokenizers.Tokenizer
    """``tokenizer.json`` as a Rust tokenizer with padding and truncation off (what StaticEmbedding uses)."""
    from tokenizers import Tokenizer

    if not file.is_file():
        raise ModelFolderError(f"{file}: missing (the static model's tokenizer)")
    try:
        tokenizer = Tokenizer.from_file(str(file))
    except Exception as err:  # noqa: BLE001 - the Rust reader's errors have no common class
        raise ModelFolderError(f"{file}: not a tokenizers file: {err}") from err
    tokenizer.no_padding()
    tokenizer.no_truncation()
    check_patterns(tokenizer, str(file))
    return tokenizer


def bag_mean(table: np.ndarray, ids: Sequence[Sequence[int]] | TokenRows) -> np.ndarray:
    """The mean of ``table``'s rows of each id list: (N, D) float32; an empty list gives zeros. One flat gather
    and sum per batch (torch's EmbeddingBag kernel, what sentence-transformers' StaticEmbedding runs)."""
    if not isinstance(ids, TokenRows):
        ids = TokenRows.of(ids)
    if not len(ids.lengths):
        return np.zeros((0, table.shape[1]), dtype=np.float32)
    weights = torch.from_numpy(table)  # (V, D), shared, not copied
    sums = torch.nn.functional.embedding_bag(
        torch.from_numpy(ids.ids), weights, torch.from_numpy(ids.offsets), mode="sum"
    ).numpy()  # (N, D)
    return sums / np.maximum(ids.lengths, 1)[:, None].astype(np.float32)


class StaticEncoder:
    """A static folder with the ``Encoder`` API: ``encode``, ``similarity``, ``tokenizer``, ``max_length``,
    ``embedding_dim``; ``table`` (V, D) holds the token vectors."""

    backend = "static"
    reads_special_tokens = False  # a bag of its text's tokens: [CLS]/[SEP] count toward no length

    def __init__(self, folder: str | Path) -> None:
        from transformers import PreTrainedTokenizerFast

        self.folder = Path(folder)
        modules = static_modules(self.folder)
        if modules is None:
            raise ModelFolderError(
                f"{self.folder}: not a static model folder (no StaticEmbedding in modules.json)"
            )
        self.normalize_output = _check_modules(self.folder, modules)
        self.table = _read_table(self.folder)
        #: the weighted form's tables (None: the one-table form, a plain mean)
        self.weighted = read_weighted(self.folder, self.table) if has_weights(self.folder) else None
        self.rust_tokenizer = load_tokenizer(self.folder / TOKENIZER_FILE)
        if self.rust_tokenizer.get_vocab_size() > len(self.table):
            raise ModelFolderError(
                f"{self.folder / WEIGHTS_FILE}: {len(self.table)} token vectors for a tokenizer of "
                f"{self.rust_tokenizer.get_vocab_size()} tokens"
            )
        copy = type(self.rust_tokenizer).from_str(
            self.rust_tokenizer.to_str()
        )  # the counting tokenizer's own
        self.tokenizer = PreTrainedTokenizerFast(tokenizer_object=copy)
        self.tokens = StaticTokenizer(self.rust_tokenizer)
        self.max_length = STATIC_MAX_TOKENS
        self.embedding_dim = int(self.table.shape[1])

    def eval(self) -> StaticEncoder:  # the PyTorch encoder's calls are no-ops here
        return self

    def to(self, device: Any) -> StaticEncoder:  # noqa: ARG002
        return self

    def token_rows(self, texts: Sequence[str], max_length: int | None = None) -> TokenRows:
        """The texts' token ids, no special tokens, each cut at ``max_length`` (default ``self.max_length``)."""
        limit = min(max_length or self.max_length, self.max_length)
        bounded = bounded_texts(texts, limit)  # the input budget (sentcl.files.budget)
        return self.tokens.ids(bounded).cut(limit)

    def pool(self, rows: TokenRows) -> np.ndarray:
        """The texts' vectors (N, D) before normalisation: the plain or the weighted mean of their rows."""
        return bag_mean(self.table, rows) if self.weighted is None else self.weighted(rows)

    def encode(
        self,
        sentences: str | Sequence[str],
        batch_size: int = ENCODE_BATCH_SIZE,
        normalize: bool = False,
        convert_to_numpy: bool = True,
        show_progress: bool = False,  # noqa: ARG002 - the Encoder API; a static encode takes no time to show
        max_length: int | None = None,
        normalize_embeddings: bool | None = None,
    ) -> np.ndarray | torch.Tensor:
        """Embed in input order: the mean of each sentence's token rows (then L2-normalised when the folder
        has a Normalize module or ``normalize``; ``normalize_embeddings``: sentence-transformers' name). The
        weighted form pools at least ``POOL_TEXTS`` sentences a pass, whatever ``batch_size`` says."""
        normalize = wants_unit_rows(normalize, normalize_embeddings)
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if max_length is not None and max_length <= 0:
            raise ValueError(f"max_length must be positive, got {max_length}")
        single = isinstance(sentences, str)
        texts = [sentences] if single else list(sentences)
        out = np.empty((len(texts), self.embedding_dim), dtype=np.float32)  # (N, D)
        step = batch_size if self.weighted is None else max(batch_size, POOL_TEXTS)  # static_weighted
        for start in range(0, len(texts), step):
            chunk = texts[start : start + step]
            out[start : start + len(chunk)] = self.pool(self.token_rows(chunk, max_length))
        if normalize or self.normalize_output:
            out = unit_rows(out)
        result = out[0] if single else out
        return result if convert_to_numpy else torch.from_numpy(result)

    def similarity(self, a: Any, b: Any) -> np.ndarray:
        """Cosine similarity of every a against every b: (len(a), len(b)); strings are encoded first."""
        return cosine_matrix(embedding_matrix(self, a), embedding_matrix(self, b)).numpy()


def _write_static(
    folder: Path,
    tokenizer_json: str,
    table: np.ndarray,
    normalize: bool,
    card: str,
    extra: dict[str, Any],
    weighted: WeightedMean | None,
) -> None:
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)  # made and marked by sentcl.files.output.write_folder
    kind = ST_TYPE if weighted is None else WEIGHTED_TYPE
    modules = [{"idx": 0, "name": "0", "path": "", "type": kind}]
    if normalize:
        modules.append({"idx": 1, "name": "1", "path": "1_Normalize", "type": NORMALIZE_TYPE})
        (folder / "1_Normalize").mkdir()
    (folder / "modules.json").write_text(dumps_strict(modules) + "\n", encoding="utf-8")
    save_file({WEIGHT_KEY: np.ascontiguousarray(table, dtype=np.float32)}, str(folder / WEIGHTS_FILE))
    if weighted is not None:
        save_weighted(folder, weighted)
    (folder / TOKENIZER_FILE).write_text(tokenizer_json, encoding="utf-8")
    config = {"__version__": {"sentence_transformers": "3.0.0"}, "similarity_fn_name": "cosine"}
    (folder / "config_sentence_transformers.json").write_text(dumps_strict(config) + "\n", encoding="utf-8")
    (folder / "README.md").write_text(card, encoding="utf-8")
    for name, payload in extra.items():
        (folder / name).write_text(dumps_strict(payload) + "\n", encoding="utf-8")


def save_static(
    folder: str | Path,
    tokenizer: Any,
    table: np.ndarray,
    normalize: bool = True,
    card: str = "",
    extra: dict[str, Any] | None = None,
    *,
    weighted: WeightedMean | None = None,
    flag: str = "OUTPUT",
    inputs: Sequence[Input] = (),
    overwrite: bool = False,
) -> Path:
    """Write a static folder: ``tokenizer`` (a tokenizers.Tokenizer) and its token vectors ``table`` (V, D);
    ``extra``: more JSON files (name -> content), e.g. how the table was made; ``weighted``: the weighted
    form's tables over ``table`` (``static_weighted``), else the one-table form.

    Through the output policy (``sentcl.files.output.write_folder``, kind ``model``): ``folder`` is new or
    empty, or with ``overwrite`` an earlier model sentcl wrote (never a folder of the user's files, another
    model, nor one of ``inputs``); it is written whole into a marked temporary sibling and swapped in.
    """
    from sentcl.files.output import write_folder

    folder = Path(folder)
    if table.ndim != 2 or len(table) < tokenizer.get_vocab_size():
        raise ValueError(
            f"token vectors of shape {table.shape} for a tokenizer of {tokenizer.get_vocab_size()} tokens"
        )
    if weighted is not None and len(weighted.rows) != len(table):
        raise ValueError(f"attention weights for {len(weighted.rows)} tokens beside a table of {len(table)}")
    bad = first_bad_row(np.asarray(table))
    if bad is not None or not np.asarray(table).any():
        what = f"row {bad[0]} holds {bad[1]}" if bad else "it is all zeros"
        raise ValueError(
            f"the static model's token table is not written to {folder}: {what} (a fit that diverged: a "
            "smaller learning rate or a larger temperature)"
        )
    clean = type(tokenizer).from_str(tokenizer.to_str())  # a copy: the caller's tokenizer keeps its settings
    clean.no_padding()
    clean.no_truncation()
    text = clean.to_str()
    write = lambda tmp: _write_static(tmp, text, table, normalize, card, extra or {}, weighted)  # noqa: E731
    return write_folder(folder, "model", write, flag, inputs, overwrite=overwrite)


__all__ = [
    "STATIC_MAX_TOKENS",
    "WEIGHTED_TYPE",
    "StaticEncoder",
    "bag_mean",
    "is_static_folder",
    "load_tokenizer",
    "save_static",
]
