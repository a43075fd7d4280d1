"""DiffCSE's two networks beside the encoder: the frozen masked-LM generator G and the conditioned discriminator D.

G is any masked-LM folder (``model.generator``), loaded frozen in eval mode and checked: it must have its
masked-LM head's weights and the encoder's vocabulary, because it reads the encoder's token ids directly.

D is a copy of the encoder's backbone as it stands when training starts (the authors initialise it from the
same checkpoint as the encoder) with a 2-way head (original / replaced). It is conditioned on the sentence
vector h = f(x): h takes the place of the first position's output of D's embedding layer (the authors' modified
``BertModel``: ``cls_input`` replaces ``embedding_output[:, 0]``), so D's loss reaches f through h.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer, PreTrainedTokenizerBase

from sentcl.config.typed import ConfigError
from sentcl.files.paths import model_load_error, resolve_model_path
from sentcl.modeling.weights import TOKENIZER_FILES, check_weight_files


def _head_missing(model: nn.Module, missing: list[str]) -> list[str]:
    """The missing weight names outside the base model: the masked-LM head's."""
    prefix = getattr(model, "base_model_prefix", "")
    return [k for k in missing if not (prefix and k.startswith(prefix + "."))]


def check_generator_vocabulary(name: str, generator: nn.Module, folder: str, tokenizer: Any) -> None:
    """G reads the encoder's token ids: the same vocabulary size, and where G's folder has a tokenizer, the same
    token -> id map (a ConfigError naming both sizes, or the first token that differs)."""
    size = getattr(generator.config, "vocab_size", None)
    if size != len(tokenizer):
        raise ConfigError(
            f"model.generator {name!r} has a vocabulary of {size} tokens and the encoder's tokenizer "
            f"{len(tokenizer)}: the generator reads the encoder's token ids, so both need the same vocabulary "
            "(the paper pairs distilbert-base-uncased with bert-base-uncased)"
        )
    local = Path(folder)
    if local.is_dir() and not any((local / name).is_file() for name in TOKENIZER_FILES):
        return  # no tokenizer beside G: the sizes are all there is to compare
    try:
        own = AutoTokenizer.from_pretrained(folder)
    except (OSError, ValueError):  # a hub id without a usable tokenizer: the sizes are all there is
        return
    theirs, ours = own.get_vocab(), tokenizer.get_vocab()
    differ = sorted(t for t in set(theirs) | set(ours) if theirs.get(t) != ours.get(t))
    if differ:
        token = differ[0]
        raise ConfigError(
            f"model.generator {name!r}: its tokenizer maps {token!r} to {theirs.get(token)} and the encoder's to "
            f"{ours.get(token)} ({len(differ)} tokens differ; sizes {len(theirs)} and {len(ours)}): the "
            "generator reads the encoder's token ids, so both need the same vocabulary"
        )


def load_generator(name: str, tokenizer: PreTrainedTokenizerBase) -> nn.Module:
    """The frozen masked-LM generator G of ``model.generator`` (eval mode, no gradients), checked."""
    path = resolve_model_path(name)
    folder = Path(path)
    if folder.is_dir() and (folder / "config.json").is_file():
        check_weight_files(folder)
    try:
        AutoConfig.from_pretrained(path)
    except OSError as err:
        raise ConfigError(f"model.generator: {model_load_error(name, err)}") from None
    try:
        generator, info = AutoModelForMaskedLM.from_pretrained(path, output_loading_info=True)
    except ValueError as err:
        raise ConfigError(f"model.generator {name!r} cannot be a masked-LM: {err}") from None
    except OSError as err:
        raise ConfigError(f"model.generator: {model_load_error(name, err)}") from None
    missing = _head_missing(generator, list(info.get("missing_keys", [])))
    if missing:
        raise ConfigError(
            f"model.generator {name!r} has no masked-LM head weights (missing: {', '.join(missing[:3])}"
            f"{', ...' if len(missing) > 3 else ''}): give a folder saved from a *ForMaskedLM model, e.g. "
            "distilbert-base-uncased"
        )
    check_generator_vocabulary(name, generator, path, tokenizer)
    generator.eval()
    generator.requires_grad_(False)
    return generator


class ConditionedDiscriminator(nn.Module):
    """D(x'', h): a transformer backbone whose first input position is the sentence vector h, and a 2-way head
    per token (logit 0: original, logit 1: replaced)."""

    def __init__(self, backbone: nn.Module) -> None:
        super().__init__()
        embeddings = getattr(backbone, "embeddings", None)
        if not isinstance(embeddings, nn.Module):
            raise ValueError(
                f"{type(backbone).__name__} has no 'embeddings' layer to condition on the sentence vector"
            )
        self.backbone = backbone
        self.hidden_size = int(backbone.config.hidden_size)
        self.head = nn.Linear(self.hidden_size, 2)  # the authors' electra_head: nn.Linear(768, 2)
        self._h: Tensor | None = None
        embeddings.register_forward_hook(self._condition)

    def _condition(self, module: nn.Module, args: Any, output: Tensor) -> Tensor:
        """The embedding layer's output with position 0 replaced by h: (n, L, H)."""
        if self._h is None:
            return output
        first = self._h.to(output.dtype).unsqueeze(1)  # (n, 1, H)
        return torch.cat([first, output[:, 1:]], dim=1)  # (n, 1, H) + (n, L-1, H) -> (n, L, H)

    def forward(
        self, input_ids: Tensor, attention_mask: Tensor, h: Tensor, token_type_ids: Tensor | None = None
    ) -> Tensor:
        """Per-token logits (n, L, 2) of x'' (n, L) conditioned on h (n, H)."""
        if h.dim() != 2 or h.size(0) != input_ids.size(0) or h.size(1) != self.hidden_size:
            raise ValueError(
                f"the sentence vectors h are shaped {tuple(h.shape)}; the discriminator needs "
                f"({input_ids.size(0)}, {self.hidden_size}): one vector per row, as wide as its hidden layer"
            )
        extra = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        self._h = h
        try:
            hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask, **extra)
        finally:
            self._h = None
        return self.head(hidden.last_hidden_state)  # (n, L, 2)


def build_discriminator(encoder: nn.Module) -> ConditionedDiscriminator:
    """D from a copy of ``encoder.backbone`` (its weights when training starts) and a new 2-way head."""
    backbone = getattr(encoder, "backbone", None)
    if not isinstance(backbone, nn.Module):
        raise ValueError(f"{type(encoder).__name__} has no backbone to build DiffCSE's discriminator from")
    return ConditionedDiscriminator(copy.deepcopy(backbone))
