"""Training methods: which views each example yields, how they are encoded, and which objective scores them.

One method, one package (like transformers' ``models/bert/``)::

    sentcl/methods/diffcse/
        __init__.py   the paper, its link and how to run it
        options.py    DiffCSEOptions and RECORD (paper, reader, summary), torch-free
        build.py      build(cfg, options, corpus, tokenizer) -> Method
        loss.py       the objective on (B, V, D) embeddings
        generator.py  what only this method needs (DiffCSE's generator and discriminator)

:mod:`sentcl.config.method_catalogue` lists the records, one line per method; ``build_method`` imports a method's
``build`` module on first use. Shared pieces stay here: ``Method`` and ``build_method``
(:mod:`sentcl.methods.base`), the view helpers (:mod:`sentcl.methods.views`), teachers and their cache, the
momentum encoder. This package's face is light (no torch until a name below is asked for), so that reading a
recipe, which imports the options modules, stays torch-free.
"""

from __future__ import annotations

import importlib
from typing import Any

import sentcl.config  # noqa: F401  the recipe first: it loads the catalogue, which imports each method's options

#: the names this face offers, and the module that defines each (imported on first use)
_FACE = {
    "METHODS": "sentcl.config.method_catalogue",
    "MethodRecord": "sentcl.config.method_record",
    "Paper": "sentcl.config.method_record",
    "Builder": "sentcl.methods.base",
    "EmbeddingAugment": "sentcl.methods.base",
    "Example": "sentcl.methods.base",
    "Method": "sentcl.methods.base",
    "TokenAugment": "sentcl.methods.base",
    "ViewFn": "sentcl.methods.base",
    "build_method": "sentcl.methods.base",
    "method_builder": "sentcl.methods.base",
    "method_spec": "sentcl.methods.base",
    "duplicate_view": "sentcl.methods.views",
    "positive_view_augmented": "sentcl.methods.views",
    "text_augmentation": "sentcl.methods.views",
    "token_augmentation": "sentcl.methods.views",
}

__all__ = sorted(_FACE)


def __getattr__(name: str) -> Any:
    """``from sentcl.methods import build_method`` imports the torch side here, on first use (PEP 562)."""
    if name not in _FACE:
        raise AttributeError(f"module 'sentcl.methods' has no attribute {name!r}")
    return getattr(importlib.import_module(_FACE[name]), name)
