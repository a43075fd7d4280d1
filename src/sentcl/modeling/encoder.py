"""SentenceEncoder: a Hugging Face encoder + a SimCSE pooler + an optional MLP head (+ Dense layers).

Saved models are plain Hugging Face folders (``AutoModel.from_pretrained``
loads them); sentcl's pooler settings sit in ``sentcl.json`` and the MLP head
in ``sentcl_head.safetensors`` beside the backbone's files. Where the pooler
allows it, the folder is also a sentence-transformers folder (``modules.json``;
st_write.py). Opening a folder is ``open_model`` (open.py): locate.py finds its kind, loading.py loads the
backbone and its parts and builds this class last, from parts already checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import save_file
from torch import Tensor, nn
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from sentcl.defaults import ENCODE_BATCH_SIZE, INFERENCE_MAX_LENGTH_CAP, POOLER, TRAIN_MAX_LENGTH
from sentcl.files.atomic import dumps_strict
from sentcl.files.budget import bounded_texts
from sentcl.modeling.batching import length_sorted_batches
from sentcl.modeling.folder_layout import (  # noqa: F401 - re-exported for old imports
    HEAD_WEIGHTS,
    SENTCL_CONFIG,
    position_limit,
    set_dropout,
)
from sentcl.modeling.heads import DenseLayer, MLPHead, after_pooling
from sentcl.modeling.loading import LoadOptions, load_single
from sentcl.modeling.locate import locate
from sentcl.modeling.pooling import NEEDS_ALL_LAYERS, POOLER_SPECS, POOLERS, pool
from sentcl.modeling.prompt import Prompt, prompt_embedding
from sentcl.modeling.tokenizer_checks import quiet_rust_panics
from sentcl.similarity import cosine_matrix, embedding_matrix, unit_rows, wants_unit_rows  # noqa: F401 - cosine_matrix re-exported


class SentenceEncoder(nn.Module):
    """Maps sentences to vectors: backbone -> pooler -> (MLP head)."""

    def __init__(
        self,
        backbone: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        pooler: str = POOLER,
        mlp_only_train: bool = False,
        train_max_length: int = TRAIN_MAX_LENGTH,
        head: MLPHead | None = None,
        dense: Sequence[DenseLayer] = (),
        normalize_output: bool = False,
        seq_limit: int | None = None,
        prompt: Sequence[str] | None = None,
        prompt_denoise: str = "train",
        *,
        flow: nn.Module | None = None,
        postprocess: dict[str, Any] | None = None,
        truncate_dim: int | None = None,
        source: str | None = None,
        check_outputs: bool = False,
    ) -> None:
        """The keyword-only arguments are what a loader read beside the backbone: a BERT-flow, the record of
        what was fitted on what, a Matryoshka prefix, the folder, and ``check_outputs`` (an inference load:
        refuse non-finite embeddings in ``encode``)."""
        super().__init__()
        if pooler not in POOLERS:
            raise ValueError(f"unknown pooler {pooler!r}; valid: {', '.join(POOLERS)}")
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.pooler = pooler
        self.mlp_only_train = mlp_only_train
        self.train_max_length = (
            train_max_length  # training truncation (``tokenize``); max_length is inference
        )
        hidden = backbone.config.hidden_size
        self.head = head if head is not None else (MLPHead(hidden) if POOLER_SPECS[pooler].head else None)
        self.dense = nn.ModuleList(dense)  # sentence-transformers Dense modules after pooler and head
        self.normalize_output = normalize_output  # a sentence-transformers Normalize module
        self.seq_limit = seq_limit  # inference truncation set by the folder (ST's max_seq_length)
        self.check_outputs = check_outputs  # refuse non-finite embeddings in encode (an inference load)
        # post-processing (sentcl.postprocess): a BERT-flow after the Dense layers (whitening is a Dense layer),
        # and what was fitted on what (sentcl.json "postprocess")
        self.flow = flow
        self.postprocess = postprocess
        self.source = source
        self.truncate_dim: int | None = None  # keep the first k coordinates (Matryoshka; set_truncate_dim)
        self.set_truncate_dim(truncate_dim)
        # PromptBERT's template(s), applied by ``encode`` (templates[0]); training views apply their own
        self.prompt = Prompt(prompt, tokenizer, prompt_denoise) if prompt else None
        if POOLER_SPECS[pooler].prompt != (self.prompt is not None):
            raise ValueError(
                f"pooler {pooler!r} "
                + ("needs prompt templates" if self.prompt is None else "takes no prompt")
            )

    # ------------------------------------------------------------------ loading and saving

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str,
        pooler: str | None = None,
        mlp_only_train: bool | None = None,
        train_max_length: int | None = None,
        dropout: float | None = None,
        for_training: bool = False,
        prompt: list[str] | None = None,
        prompt_denoise: str | None = None,
    ) -> SentenceEncoder:
        """Load a hub id, local folder or offline short name; arguments override a saved sentcl.json.

        Never an untrained part at inference (loading.py); ``for_training`` lets a missing MLP head be new.
        ``train_max_length``: the training truncation (``tokenize``). ``prompt``: PromptBERT templates for
        pooler ``mask`` (default: the folder's, else the paper's). One encoder: a sentcl folder saved as a
        pair gives its f. The same as ``sentcl.modeling.open.open_encoder``, building this class;
        ``sentcl.modeling.open_model`` opens every kind of folder.
        """
        options = LoadOptions(
            pooler, mlp_only_train, train_max_length, dropout, for_training, prompt, prompt_denoise
        )
        return load_single(locate(name_or_path), options, cls)

    def save_pretrained(self, path: str | Path, sentence_transformers: bool = True) -> None:
        """Write a plain HF folder (backbone + tokenizer) with sentcl.json and the head beside it, and the
        sentence-transformers files where ST can express the pooler (unless ``sentence_transformers=False``),
        and a model card (README.md), as sentence-transformers' ``save`` does."""
        from sentcl.modeling.model_card import write_saved_card
        from sentcl.modeling.st_write import remove_st_files, write_st_files

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.backbone.save_pretrained(path)
        self.tokenizer.save_pretrained(path)
        meta: dict[str, Any] = {
            "pooler": self.pooler,
            "mlp_only_train": self.mlp_only_train,
            "train_max_length": self.train_max_length,
        }
        if self.head is not None:
            meta["head_activation"] = self.head.activation
            save_file(
                {k: v.detach().cpu().contiguous() for k, v in self.head.state_dict().items()},
                str(path / HEAD_WEIGHTS),
            )
        dense = write_st_files(self, path)
        if not sentence_transformers or self.flow is not None:  # ST cannot express BERT-flow
            remove_st_files(path)
        meta.update({"dense": dense, "normalize": self.normalize_output})
        if self.postprocess is not None or self.flow is not None:
            from sentcl.modeling.postprocess.storage import save_postprocess

            meta.update(save_postprocess(self, path))
        if self.prompt is not None:
            meta["prompt"] = self.prompt.to_json()
        if self.seq_limit is not None:
            meta["max_length"] = self.seq_limit  # the inference truncation the folder sets
        if self.truncate_dim is not None:
            meta["truncate_dim"] = self.truncate_dim
        (path / SENTCL_CONFIG).write_text(dumps_strict(meta) + "\n", encoding="utf-8")
        write_saved_card(
            path,
            source=self.source,
            pooler=self.pooler,
            head=self.pooler == "cls" and self.head is not None and not self.mlp_only_train,
            dim=self.embedding_dim,
            max_length=self.max_length,
            normalize=self.normalize_output,
        )

    # ------------------------------------------------------------------ forward

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def uses_head(self) -> bool:
        """The head applies in training, and at inference unless ``mlp_only_train``."""
        return self.head is not None and (self.training or not self.mlp_only_train)

    @property
    def max_length(self) -> int:
        """Inference truncation of ``encode``: the folder's own setting, else the model's own limit (at most
        512), as SimCSE's evaluation, which does not truncate; ``train_max_length`` is the training one."""
        if self.seq_limit is not None:
            return self.seq_limit  # the folder's own setting (sentence-transformers' max_seq_length)
        cap = INFERENCE_MAX_LENGTH_CAP
        limits = [cap, position_limit(self.backbone.config) or cap]
        model_max = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(model_max, int) and model_max > 0:
            limits.append(model_max)
        return min(limits)

    @property
    def full_embedding_dim(self) -> int:
        """The width of the pooled (+ head, Dense) vector before any truncation."""
        return int(
            self.dense[-1].linear.out_features if len(self.dense) else self.backbone.config.hidden_size
        )

    @property
    def embedding_dim(self) -> int:
        return self.truncate_dim or self.full_embedding_dim

    def set_truncate_dim(self, dim: int | None) -> None:
        """Embed into the first ``dim`` coordinates only (a Matryoshka-trained model; None: all of them).

        Cosine similarity is scale-free, so the prefix is used as it is; a model whose output is normalised
        (a Normalize module) re-normalises the prefix. Saved in sentcl.json as ``truncate_dim``."""
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0):
            raise ValueError(f"truncate_dim must be a positive whole number, got {dim!r}")
        if dim is not None and dim > self.full_embedding_dim:
            raise ValueError(
                f"truncate_dim {dim} exceeds the embedding size {self.full_embedding_dim} of model "
                f"{self.source or ''}".rstrip()
            )
        self.truncate_dim = dim

    def tokenize(self, sentences: Sequence[str], padding: bool | str = True) -> dict[str, Tensor]:
        with quiet_rust_panics():
            return dict(
                self.tokenizer(
                    bounded_texts(sentences, self.train_max_length),  # the input budget (sentcl.files.budget)
                    padding=padding,
                    truncation=True,
                    max_length=self.train_max_length,
                    return_tensors="pt",
                )
            )

    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        token_type_ids: Tensor | None = None,
        inputs_embeds: Tensor | None = None,
        head_activation: str | Sequence[str] | None = None,
    ) -> Tensor:
        """Embed a flat batch: ids (N, L) -> (N, D).

        ``head_activation`` as a sequence of V names treats the rows as (B, V)
        example-major views and gives view v the head with activation v.
        """
        if attention_mask is None:
            raise ValueError("attention_mask is required")
        head = self.head if self.uses_head else None
        kwargs: dict[str, Tensor] = {"attention_mask": attention_mask}
        if inputs_embeds is not None:
            kwargs["inputs_embeds"] = inputs_embeds
        else:
            kwargs["input_ids"] = input_ids  # type: ignore[assignment]
        if token_type_ids is not None:
            kwargs["token_type_ids"] = token_type_ids
        all_layers = self.pooler in NEEDS_ALL_LAYERS
        out = self.backbone(**kwargs, output_hidden_states=all_layers, return_dict=True)
        hidden_states = out.hidden_states if all_layers else (out.last_hidden_state,)
        if self.prompt is not None:
            if input_ids is None:
                raise ValueError("pooler 'mask' finds the [MASK] token by its id: input_ids are required")
            z = prompt_embedding(self.prompt, self.backbone, hidden_states[-1], input_ids, attention_mask)
        else:
            z = pool(self.pooler, hidden_states, attention_mask)  # (N, H)
        return after_pooling(  # (N, D)
            z, head, head_activation, self.dense, self.flow, self.truncate_dim, self.normalize_output
        )

    def finish(self, z: Tensor, head_activation: str | Sequence[str] | None = None) -> Tensor:
        """Pooled (N, H) -> the embedding (N, D): head, Dense layers, flow, truncation, normalisation."""
        head = self.head if self.uses_head else None
        return after_pooling(
            z, head, head_activation, self.dense, self.flow, self.truncate_dim, self.normalize_output
        )

    # ------------------------------------------------------------------ inference API

    @torch.inference_mode()
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
        """Embed sentences in input order (batches are sorted by token length internally).

        ``max_length`` truncates; default ``self.max_length`` (no truncation short of the model's limit).
        ``normalize_embeddings``: sentence-transformers' name of ``normalize``, accepted as well.
        """
        normalize = wants_unit_rows(normalize, normalize_embeddings)
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        limit = position_limit(self.backbone.config)
        if max_length is not None and (max_length <= 0 or (limit is not None and max_length > limit)):
            raise ValueError(
                f"max_length must be between 1 and the model's position limit {limit}, got {max_length}"
            )
        single = isinstance(sentences, str)
        texts = [sentences] if single else list(sentences)
        device = self.device
        was_training = self.training
        self.eval()
        try:
            truncate_at = max_length or self.max_length
            inputs = self.prompt.fill(texts, truncate_at) if self.prompt is not None else texts
            order, batches = length_sorted_batches(
                self.tokenizer, inputs, truncate_at, batch_size, "pt", show_progress
            )
            chunks: list[Tensor] = []
            for _, batch in batches:
                batch = {k: v.to(device) for k, v in batch.items()}
                chunks.append(self(**batch).float())
            out = torch.cat(chunks) if chunks else torch.empty(0, self.embedding_dim)
            bad = (~torch.isfinite(out)).any(dim=1) if self.check_outputs else None  # (N,), sorted order
            if bad is not None and bool(bad.any()):
                first = int(order[bad.numpy()].min())  # the first such sentence in input order
                raise ValueError(
                    f"model {self.source or ''} gives non-finite embeddings (NaN or inf) for {int(bad.sum())} "
                    f"of {len(texts)} sentences, the first being sentence {first + 1}: {texts[first][:60]!r}"
                )
            out = out[
                torch.as_tensor(np.argsort(order, kind="stable"), dtype=torch.long)
            ]  # back to input order
            if normalize:
                out = unit_rows(out)
        finally:
            self.train(was_training)
        out = out.cpu()
        if single:
            out = out[0]
        return out.numpy() if convert_to_numpy else out

    def similarity(
        self, a: str | Sequence[str] | np.ndarray | Tensor, b: str | Sequence[str] | np.ndarray | Tensor
    ) -> np.ndarray:
        """Cosine similarity of every a against every b: (len(a), len(b)); strings are encoded first."""
        return cosine_matrix(embedding_matrix(self, a), embedding_matrix(self, b)).numpy()
