"""Engines: the ways sentcl runs its encoder (``open_model``'s ``Encoder``) over a corpus.

An engine takes what to open (``ModelSpec``), how to encode (``EncodeSettings``) and the texts, and returns
their vectors; or a line file and a folder, and writes the shard format (``sentcl.data.shards``: the manifest,
the hashes, resume and refusal as the integrity model says). Commands call ``open_engine(name)`` and the
engine's methods, never a branch on the engine's name:

* ``local`` (``sentcl.engines.local``): in this process, or in every process of a ``torchrun`` (the ranks
  share the shards);
* ``ray`` (``sentcl.engines.ray``): a Ray Data actor pool, each actor holding the model once, on a local Ray
  or on a cluster (``--ray-address``), GPUs where the cluster has them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from sentcl.engines.sources import Source

#: engine name -> "module:class"
ENGINES = {"local": "sentcl.engines.local:LocalEngine", "ray": "sentcl.engines.ray:RayEngine"}


@dataclass(frozen=True)
class ModelSpec:
    """How to open the encoder: what ``open_model`` takes (picklable, so a remote worker opens it too)."""

    model: str
    pooler: str | None = None
    backend: str = "auto"
    int8: bool = False
    truncate_dim: int | None = None

    def open(self, threads: int | None = None) -> Any:
        from sentcl.modeling.open import open_model

        return open_model(
            self.model,
            pooler=self.pooler,
            backend=self.backend,
            int8=self.int8,
            truncate_dim=self.truncate_dim,
            threads=threads,
        )


@dataclass(frozen=True)
class EncodeSettings:
    """How every text is encoded, whatever the engine."""

    batch_size: int
    max_length: int | None = None
    normalize: bool = False


class EncodeEngine(Protocol):
    def encode(self, spec: ModelSpec, texts: list[str], settings: EncodeSettings) -> np.ndarray:
        """(len(texts), D) float32, row i for text i."""
        ...

    def encode_shards(
        self, spec: ModelSpec, source: Source, out_dir: Path, shard_size: int, settings: EncodeSettings
    ) -> dict[str, Any]:
        """Encode the source into shards under ``out_dir`` (resuming); returns the manifest."""
        ...

    def close(self) -> None: ...


def open_engine(name: str, address: str | None = None) -> EncodeEngine:
    """The engine called ``name``; ``address``: the cluster to run on (None: this machine)."""
    if name not in ENGINES:
        raise ValueError(f"--engine {name!r}: expected one of {', '.join(ENGINES)}")
    module, cls = ENGINES[name].split(":")
    engine: EncodeEngine = getattr(importlib.import_module(module), cls)(address=address)
    return engine


@dataclass
class EngineEncoder:
    """An engine and a model as the encoder a command's helper calls (``encode(texts, ...)``): ``sentcl mine``
    encodes its anchors and candidates so, on whichever engine."""

    engine: EncodeEngine
    spec: ModelSpec

    def encode(
        self,
        texts: list[str],
        batch_size: int,
        normalize: bool = False,
        max_length: int | None = None,
        show_progress: bool = False,
    ) -> np.ndarray:
        return self.engine.encode(self.spec, list(texts), EncodeSettings(batch_size, max_length, normalize))
