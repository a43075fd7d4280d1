"""PromptBERT (Jiang et al. 2022): the sentence vector is the [MASK] state of a template, minus the template's own.

A template is text with one ``[X]`` (the sentence) and one ``[MASK]``, e.g. ``This sentence : "[X]" means
[MASK] .``. ``fill`` writes sentences into it, truncating the sentence (never the template) so that the whole
fits ``max_length`` tokens. ``PromptPooler`` takes the last-layer state of each row's [MASK] token and, with
template denoising, subtracts the [MASK] state of the template alone (the sentence's tokens removed), computed
with the position ids the template tokens have in the with-sentence row: positions 0..lead+p-1 for [CLS] and
the prefix, then lead+p+n.. for the suffix, n being the sentence's token count. The template-only input thus
depends on (template, n); it is computed once per distinct (template, n) of a batch.

Assumption (true for BERT's WordPiece, whose pre-tokenizer splits at punctuation and spaces): the template's
prefix and suffix tokenize the same alone as around a sentence. A row where they do not is an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from sentcl.config.prompt_templates import (  # noqa: F401 - the templates as text (torch-free), re-exported
    DENOISE_MODES,
    MASK,
    PROMPTBERT_BERT_TEMPLATES,
    SENTENCE,
    SNCSE_BERT_TEMPLATES,
    check_template,
)
from sentcl.files.budget import bounded_texts

# model types whose position ids start after the padding index (RoBERTa's offset of pad_token_id + 1)
_PADDING_OFFSET_TYPES = frozenset({"roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text"})


@dataclass(frozen=True)
class TemplateTokens:
    """One template's token ids around the sentence: ``prefix`` before [X], ``suffix`` after it."""

    text: str
    prefix_text: str
    suffix_text: str  # with the tokenizer's own mask token in place of [MASK]
    prefix: tuple[int, ...]
    suffix: tuple[int, ...]
    mask_in_suffix: int  # index of the mask token in ``suffix``

    @classmethod
    def build(cls, template: str, tokenizer) -> TemplateTokens:  # noqa: ANN001
        check_template(template)
        if tokenizer.mask_token is None:
            raise ValueError(f"prompt template {template!r}: the tokenizer has no mask token")
        prefix_text, suffix_text = template.split(SENTENCE)
        suffix_text = suffix_text.replace(MASK, tokenizer.mask_token)
        prefix = tuple(tokenizer(prefix_text, add_special_tokens=False)["input_ids"])
        suffix = tuple(tokenizer(suffix_text, add_special_tokens=False)["input_ids"])
        if suffix.count(tokenizer.mask_token_id) != 1:
            raise ValueError(f"prompt template {template!r}: its suffix does not tokenize to one mask token")
        return cls(template, prefix_text, suffix_text, prefix, suffix, suffix.index(tokenizer.mask_token_id))


class Prompt:
    """Templates bound to a tokenizer; ``templates[0]`` is the one applied at inference."""

    def __init__(self, templates: Sequence[str], tokenizer, denoise: str = "train") -> None:  # noqa: ANN001
        if not templates:
            raise ValueError("a prompt needs at least one template")
        if denoise not in DENOISE_MODES:
            raise ValueError(f"prompt denoise={denoise!r}; valid: {', '.join(DENOISE_MODES)}")
        self.templates = [TemplateTokens.build(t, tokenizer) for t in templates]
        self.tokenizer = tokenizer
        self.denoise = denoise
        # special tokens before the text ([CLS] / <s>): where the prefix starts in a row
        marked = tokenizer(tokenizer.mask_token)["input_ids"]  # e.g. [CLS] [MASK] [SEP]
        self.lead = marked.index(tokenizer.mask_token_id)
        self.num_special = len(marked) - 1

    def denoises(self, training: bool) -> bool:
        """Whether the template-only [MASK] state is subtracted now (in training / at inference)."""
        return self.denoise == "always" or (self.denoise == "train" and training)

    def to_json(self) -> dict[str, object]:
        return {"templates": [t.text for t in self.templates], "denoise": self.denoise}

    # ------------------------------------------------------------------ text

    def fill(self, sentences: Sequence[str], max_length: int, template: int = 0) -> list[str]:
        """Each sentence written into template ``template``, the sentence cut to whole tokens so that the
        filled text is at most ``max_length`` tokens with the special ones."""
        t = self.templates[template]
        budget = max_length - self.num_special - len(t.prefix) - len(t.suffix)
        if budget < 1:
            raise ValueError(
                f"prompt template {t.text!r} takes {len(t.prefix) + len(t.suffix) + self.num_special} tokens: "
                f"no room for the sentence within max_length={max_length}"
            )
        return [t.prefix_text + self._cut(s, budget) + t.suffix_text for s in sentences]

    def _cut(self, sentence: str, budget: int) -> str:
        sentence = bounded_texts([sentence], budget)[0]  # the input budget: never tokenise a whole huge line
        # measured against the budget here: no "longer than the model's maximum" warning from transformers
        enc = self.tokenizer(sentence, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        if len(enc["input_ids"]) <= budget:
            return sentence
        keep = budget
        while keep > 0:  # a prefix cut at a token boundary re-tokenizes to the same pieces (WordPiece)
            cut = sentence[: enc["offset_mapping"][keep - 1][1]]
            if len(self.tokenizer(cut, add_special_tokens=False, verbose=False)["input_ids"]) <= budget:
                return cut
            keep -= 1
        return ""

    # ------------------------------------------------------------------ tensors

    def mask_positions(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        """Index of each row's one mask token: (N, L) -> (N,); a row without exactly one is an error."""
        is_mask = (input_ids == self.tokenizer.mask_token_id) & attention_mask.bool()  # (N, L)
        counts = is_mask.sum(dim=1)  # (N,)
        if bool((counts != 1).any()):
            row = int((counts != 1).nonzero()[0])
            raise ValueError(
                f"prompt pooler: row {row} holds {int(counts[row])} mask tokens instead of 1 (was the template "
                "applied, and did truncation keep it?)"
            )
        return is_mask.int().argmax(dim=1)  # (N,)

    def _template_of(self, ids: list[int], m: int) -> tuple[int, int]:
        """(template index, sentence token count n) of one with-sentence row whose mask sits at ``m``."""
        for k, t in enumerate(self.templates):
            start, end = self.lead + len(t.prefix), m - t.mask_in_suffix  # the sentence's span
            if (
                end >= start
                and tuple(ids[self.lead : start]) == t.prefix
                and tuple(ids[end : end + len(t.suffix)]) == t.suffix
            ):
                return k, end - start
        raise ValueError(
            f"prompt denoising: a row matches none of the templates {[t.text for t in self.templates]} "
            f"(ids {ids[:12]}...); the template must tokenize the same alone and around a sentence"
        )

    def template_only_inputs(
        self, input_ids: Tensor, attention_mask: Tensor, position_offset: int = 0
    ) -> tuple[dict[str, Tensor], Tensor, Tensor]:
        """The distinct template-only inputs of a batch: (inputs with explicit ``position_ids`` (U, L'),
        their mask indices (U,), each row's index into the U inputs (N,))."""
        positions = self.mask_positions(input_ids, attention_mask)  # (N,)
        lengths = attention_mask.sum(dim=1)  # (N,)
        keys: dict[tuple[int, int], int] = {}
        rows: list[tuple[list[int], list[int], int]] = []
        which = []
        for r in range(input_ids.size(0)):
            ids = input_ids[r, : int(lengths[r])].tolist()
            m = int(positions[r])
            key = self._template_of(ids, m)
            if key not in keys:
                k, n = key
                start = self.lead + len(self.templates[k].prefix)  # first sentence token
                kept = ids[:start] + ids[start + n :]  # the row without its sentence
                pos = list(range(start)) + list(range(start + n, len(ids)))  # positions the tokens had
                keys[key] = len(rows)
                rows.append((kept, pos, m - n))
            which.append(keys[key])
        width = max(len(k) for k, _, _ in rows)
        pad = self.tokenizer.pad_token_id or 0
        ids_t = torch.full((len(rows), width), pad, dtype=torch.long)  # (U, L')
        pos_t = torch.zeros((len(rows), width), dtype=torch.long)  # (U, L')
        mask_t = torch.zeros((len(rows), width), dtype=torch.long)  # (U, L')
        for u, (kept, pos, _) in enumerate(rows):
            ids_t[u, : len(kept)] = torch.tensor(kept)
            pos_t[u, : len(pos)] = torch.tensor(pos) + position_offset
            mask_t[u, : len(kept)] = 1
        device = input_ids.device
        inputs = {
            "input_ids": ids_t.to(device),
            "attention_mask": mask_t.to(device),
            "position_ids": pos_t.to(device),
        }
        mask_index = torch.tensor([mi for _, _, mi in rows], dtype=torch.long, device=device)  # (U,)
        return inputs, mask_index, torch.tensor(which, dtype=torch.long, device=device)


def position_offset(config) -> int:  # noqa: ANN001
    """First position id of the backbone (RoBERTa-style models start after the padding index)."""
    if getattr(config, "model_type", "") in _PADDING_OFFSET_TYPES:
        return int(getattr(config, "pad_token_id", None) or 0) + 1
    return 0


def prompt_embedding(
    prompt: Prompt, backbone: nn.Module, last_hidden: Tensor, input_ids: Tensor, attention_mask: Tensor
) -> Tensor:
    """The [MASK] state of each row (N, H), minus the template-only [MASK] state where the prompt's denoise
    mode says so for the backbone's mode (``train``: in training only; ``always``; ``never``)."""
    rows = torch.arange(input_ids.size(0), device=input_ids.device)
    h = last_hidden[rows, prompt.mask_positions(input_ids, attention_mask)]  # (N, H)
    if not prompt.denoises(backbone.training):
        return h
    inputs, mask_index, which = prompt.template_only_inputs(
        input_ids, attention_mask, position_offset(backbone.config)
    )
    out = backbone(**inputs, return_dict=True).last_hidden_state  # (U, L', H)
    bias = out[torch.arange(out.size(0), device=out.device), mask_index]  # (U, H)
    return h - bias[which]  # (N, H)


def prompt_arguments(
    uses_prompt: bool, saved: dict[str, Any] | None, templates: list[str] | None, denoise: str | None
) -> dict[str, Any]:
    """An encoder's ``prompt`` and ``prompt_denoise``: the caller's templates, else the folder's (sentcl.json
    "prompt"), else PromptBERT's; none unless the pooler reads a template (``uses_prompt``)."""
    if not uses_prompt:
        return {}
    stored = (saved or {}).get("prompt") or {}
    return {
        "prompt": templates or stored.get("templates") or list(PROMPTBERT_BERT_TEMPLATES),
        "prompt_denoise": stored.get("denoise", "train") if denoise is None else denoise,
    }
