"""The one pooler table: every question about a pooler is answered here (torch-free).

What each pooler computes lives in ``modeling/pooling.py`` (the functions, keyed by these names); this table
says what the rest of the house needs to know without importing torch: whether the pooler adds SimCSE's MLP
head, whether it reads more than the last layer, whether it needs a prompt template (PromptBERT), its
sentence-transformers equivalent, whether the packed-token forward computes it exactly, and how a model card
writes it out for plain transformers users.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PoolerInfo:
    """One pooler's facts."""

    name: str
    #: adds SimCSE's MLP head (``cls``)
    head: bool = False
    #: reads more than the last layer (the encoder asks for ``output_hidden_states=True``)
    all_layers: bool = False
    #: reads the [MASK] row of a prompt template (PromptBERT; modeling/prompt.py)
    prompt: bool = False
    #: sentence-transformers ``Pooling`` mode that computes the same vector, None when there is none
    st_pooling: str | None = None
    #: the packed-token forward (modeling/packed.py) computes it exactly
    packed: bool = False
    #: one line for model cards and help texts
    description: str = ""
    #: how a model card computes it with plain transformers from ``out`` (``output_hidden_states=True``;
    #: ``hidden_states[0]`` is the embeddings' output) and ``batch`` (the tokenizer's output)
    card_snippet: str = ""


_MASK = 'mask = batch["attention_mask"].unsqueeze(-1)  # (N, L, 1)\n'
_CLS = "emb = out.last_hidden_state[:, 0]  # [CLS], (N, H)\n"
_MEAN_OF = "emb = (h * mask).sum(1) / mask.sum(1)  # mean over real tokens, (N, H)\n"

POOLER_TABLE: dict[str, PoolerInfo] = {
    p.name: p
    for p in (
        PoolerInfo("cls", head=True, st_pooling="cls", packed=True,
                   description="[CLS] of the last layer, then SimCSE's MLP head", card_snippet=_CLS),
        PoolerInfo("cls_before_pooler", st_pooling="cls", packed=True,
                   description="[CLS] of the last layer, no head", card_snippet=_CLS),
        PoolerInfo("avg", st_pooling="mean", packed=True,
                   description="mean of the last layer over real tokens",
                   card_snippet=_MASK + "h = out.last_hidden_state  # (N, L, H)\n" + _MEAN_OF),
        PoolerInfo("avg_top2", all_layers=True,
                   description="mean of the last two layers over real tokens",
                   card_snippet=_MASK + "h = (out.hidden_states[-2] + out.hidden_states[-1]) / 2  # (N, L, H)\n"
                   + _MEAN_OF),
        PoolerInfo("avg_first_last", all_layers=True,
                   description="mean of the first and the last layer over real tokens",
                   card_snippet=_MASK + "h = (out.hidden_states[1] + out.hidden_states[-1]) / 2  # (N, L, H)\n"
                   + _MEAN_OF),
        # PromptBERT / SNCSE: each sentence is first written into sentcl.json's prompt.templates[0] ([X] -> the
        # sentence, [MASK] -> tok.mask_token); denoise "always" also subtracts the template-only state
        PoolerInfo("mask", prompt=True,
                   description="PromptBERT: the last layer's state at the template's [MASK]",
                   card_snippet="# the sentences must first be written into sentcl.json's prompt.templates[0]\n"
                   "emb = out.last_hidden_state[batch['input_ids'] == tok.mask_token_id]  # the [MASK] rows, (N, H)\n"),
    )
}  # fmt: skip

#: pooler names in declaration order (the CLI's --pooler choices, config validation)
POOLERS: tuple[str, ...] = tuple(POOLER_TABLE)
#: poolers with no MLP head of their own: what a folder without a trained head can be loaded with
HEADLESS_POOLERS: tuple[str, ...] = tuple(n for n, p in POOLER_TABLE.items() if not p.head and not p.prompt)


def pooler_info(name: str) -> PoolerInfo:
    """The pooler called ``name``; an unknown name is a KeyError that lists the valid ones."""
    if name not in POOLER_TABLE:
        raise KeyError(f"unknown pooler {name!r}; valid: {', '.join(POOLERS)}")
    return POOLER_TABLE[name]
