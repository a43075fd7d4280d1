"""SentenceEncoder: a Hugging Face encoder + a SimCSE pooler + an optional MLP head.

Saved models are plain Hugging Face folders (``AutoModel.from_pretrained``
loads them); sentcl's pooler settings sit in ``sentcl.json`` and the MLP head
in ``sentcl_head.safetensors`` beside the backbone's files.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn
from tqdm.auto import tqdm
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from sentcl.config import POOLERS
from sentcl.modeling.heads import MLPHead
from sentcl.modeling.pooling import NEEDS_ALL_LAYERS, cosine_matrix, pool
from sentcl.paths import model_load_error, resolve_model_path

SENTCL_CONFIG = "sentcl.json"
HEAD_WEIGHTS = "sentcl_head.safetensors"
DROPOUT_ATTRS = ("hidden_dropout_prob", "attention_probs_dropout_prob", "dropout", "attention_dropout")
# Poolers whose inference-time embedding sentence-transformers can reproduce with its Pooling module.
_ST_POOLING_MODE = {"avg": "pooling_mode_mean_tokens", "cls_before_pooler": "pooling_mode_cls_token"}


def set_dropout(config: Any, rate: float) -> None:
    """Set every dropout rate the config knows (BERT/RoBERTa and DistilBERT spellings)."""
    found = [attr for attr in DROPOUT_ATTRS if hasattr(config, attr)]
    if not found:
        raise ValueError(
            f"model config {type(config).__name__} has no dropout setting ({', '.join(DROPOUT_ATTRS)})"
        )
    for attr in found:
        setattr(config, attr, rate)


class SentenceEncoder(nn.Module):
    """Maps sentences to vectors: backbone -> pooler -> (MLP head)."""

    def __init__(
        self,
        backbone: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        pooler: str = "cls",
        mlp_only_train: bool = False,
        max_length: int = 32,
        head: MLPHead | None = None,
    ) -> None:
        super().__init__()
        if pooler not in POOLERS:
            raise ValueError(f"unknown pooler {pooler!r}; valid: {', '.join(POOLERS)}")
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.pooler = pooler
        self.mlp_only_train = mlp_only_train
        self.max_length = max_length
        hidden = backbone.config.hidden_size
        self.head = head if head is not None else (MLPHead(hidden) if pooler == "cls" else None)

    # ------------------------------------------------------------------ loading and saving

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str,
        pooler: str | None = None,
        mlp_only_train: bool | None = None,
        max_length: int | None = None,
        dropout: float | None = None,
    ) -> SentenceEncoder:
        """Load a hub id, local folder or offline short name; arguments override a saved sentcl.json."""
        path = resolve_model_path(name_or_path)
        saved: dict[str, Any] = {}
        if Path(path, SENTCL_CONFIG).is_file():
            saved = json.loads(Path(path, SENTCL_CONFIG).read_text(encoding="utf-8"))
        try:
            config = AutoConfig.from_pretrained(path)
            if dropout is not None:
                set_dropout(config, dropout)
            backbone = AutoModel.from_pretrained(path, config=config)
            tokenizer = AutoTokenizer.from_pretrained(path)
        except OSError as err:
            raise model_load_error(name_or_path, err) from err
        pooler = pooler or saved.get("pooler", "cls")
        head = None
        head_file = Path(path, HEAD_WEIGHTS)
        if pooler == "cls" and head_file.is_file():
            head = MLPHead(config.hidden_size)
            head.load_state_dict(load_file(str(head_file)))
        return cls(
            backbone,
            tokenizer,
            pooler=pooler,
            mlp_only_train=saved.get("mlp_only_train", False) if mlp_only_train is None else mlp_only_train,
            max_length=max_length or saved.get("max_length", 32),
            head=head,
        )

    def save_pretrained(self, path: str | Path) -> None:
        """Write a plain HF folder (backbone + tokenizer) with sentcl.json and the head beside it."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.backbone.save_pretrained(path)
        self.tokenizer.save_pretrained(path)
        meta = {"pooler": self.pooler, "mlp_only_train": self.mlp_only_train, "max_length": self.max_length}
        (path / SENTCL_CONFIG).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        if self.head is not None:
            save_file(
                {k: v.detach().cpu().contiguous() for k, v in self.head.state_dict().items()},
                str(path / HEAD_WEIGHTS),
            )
        self._write_sentence_transformers_files(path)

    def _write_sentence_transformers_files(self, path: Path) -> None:
        """Let sentence-transformers load the folder where its Pooling module gives our inference embedding."""
        pooler = "cls_before_pooler" if self.pooler == "cls" and self.mlp_only_train else self.pooler
        mode = _ST_POOLING_MODE.get(pooler)
        if mode is None:
            return
        modules = [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        ]
        (path / "modules.json").write_text(json.dumps(modules, indent=2) + "\n", encoding="utf-8")
        (path / "sentence_bert_config.json").write_text(
            json.dumps({"max_seq_length": self.inference_max_length, "do_lower_case": False}, indent=2)
            + "\n",
            encoding="utf-8",
        )
        (path / "1_Pooling").mkdir(exist_ok=True)
        pooling = {"word_embedding_dimension": self.backbone.config.hidden_size, mode: True}
        (path / "1_Pooling" / "config.json").write_text(
            json.dumps(pooling, indent=2) + "\n", encoding="utf-8"
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
    def inference_max_length(self) -> int:
        """Truncation for ``encode``: the model's own limit (at most 512), as SimCSE's evaluation, which
        does not truncate; ``max_length`` is the training truncation."""
        limits = [512, getattr(self.backbone.config, "max_position_embeddings", 512)]
        model_max = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(model_max, int) and model_max > 0:
            limits.append(model_max)
        return min(limits)

    @property
    def embedding_dim(self) -> int:
        return int(self.backbone.config.hidden_size)

    def tokenize(self, sentences: Sequence[str], padding: bool | str = True) -> dict[str, Tensor]:
        return dict(
            self.tokenizer(
                list(sentences),
                padding=padding,
                truncation=True,
                max_length=self.max_length,
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
        z = pool(self.pooler, hidden_states, attention_mask)  # (N, H)
        if not self.uses_head:
            return z
        assert self.head is not None
        if head_activation is None or isinstance(head_activation, str):
            return self.head(z, head_activation)
        views = len(head_activation)
        z = z.view(-1, views, z.size(-1))  # (B, V, H)
        z = torch.stack(
            [self.head(z[:, v], act) for v, act in enumerate(head_activation)], dim=1
        )  # (B, V, H)
        return z.view(-1, z.size(-1))  # (B·V, H)

    # ------------------------------------------------------------------ inference API

    @torch.inference_mode()
    def encode(
        self,
        sentences: str | Sequence[str],
        batch_size: int = 64,
        normalize: bool = False,
        convert_to_numpy: bool = True,
        show_progress: bool = False,
        max_length: int | None = None,
    ) -> np.ndarray | Tensor:
        """Embed sentences in input order (batches are sorted by token length internally).

        ``max_length`` truncates; default ``inference_max_length`` (no truncation short of the model's limit).
        """
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        single = isinstance(sentences, str)
        texts = [sentences] if single else list(sentences)
        was_training = self.training
        self.eval()
        try:
            limit = max_length or self.inference_max_length
            ids = self.tokenizer(texts, truncation=True, max_length=limit)["input_ids"] if texts else []
            order = np.argsort([-len(x) for x in ids], kind="stable")
            chunks: list[Tensor] = []
            starts = range(0, len(texts), batch_size)
            for start in tqdm(starts, desc="encode", disable=not show_progress, leave=False):
                idx = order[start : start + batch_size]
                batch = self.tokenizer.pad({"input_ids": [ids[i] for i in idx]}, return_tensors="pt")
                batch = {k: v.to(self.device) for k, v in batch.items()}
                chunks.append(self(**batch).float())
            out = torch.cat(chunks) if chunks else torch.empty(0, self.embedding_dim)
            out = out[
                torch.as_tensor(np.argsort(order, kind="stable"), dtype=torch.long)
            ]  # back to input order
            if normalize:
                out = nn.functional.normalize(out, dim=-1)
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


def embedding_matrix(encoder: nn.Module, x: str | Sequence[str] | np.ndarray | Tensor) -> Tensor:
    """Sentences (encoded with ``encoder.encode``) or ready embeddings -> a float tensor (N, D)."""
    if isinstance(x, str):
        x = [x]
    if isinstance(x, np.ndarray | Tensor):
        t = torch.as_tensor(x, dtype=torch.float32)
    else:
        t = encoder.encode(list(x), convert_to_numpy=False)
    return t.unsqueeze(0) if t.dim() == 1 else t
