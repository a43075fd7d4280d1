"""The in-process engine: the encoder in this process, or in each process of a ``torchrun`` (rank r encodes
shards r, r + W, ...: ``sentcl.data.shards.encode_shards``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sentcl import distributed
from sentcl.engines import EncodeSettings, ModelSpec
from sentcl.engines.sources import Source


class LocalEngine:
    def __init__(self, address: str | None = None) -> None:
        if address is not None:
            raise ValueError(f"--ray-address {address} needs --engine ray")
        self._models: dict[ModelSpec, Any] = {}  # opened once, kept for the engine's next call

    def encode(self, spec: ModelSpec, texts: list[str], settings: EncodeSettings) -> np.ndarray:
        if spec not in self._models:
            self._models[spec] = spec.open()
        model = self._models[spec]
        embeddings = model.encode(
            texts,
            batch_size=settings.batch_size,
            normalize=settings.normalize,
            show_progress=True,
            max_length=settings.max_length,
        )
        return np.asarray(embeddings, dtype=np.float32).reshape(len(texts), -1)  # (N, D)

    def encode_shards(
        self, spec: ModelSpec, source: Source, out_dir: Path, shard_size: int, settings: EncodeSettings
    ) -> dict[str, Any]:
        from sentcl.data.shards import encode_shards

        if not source.local_text:
            raise ValueError(
                f"--input {source.uri}: the in-process engine writes shards of a local text file; "
                "--engine ray reads JSON Lines, Parquet and object storage"
            )
        input_path = Path(source.uri)
        joined = distributed.init_from_env()
        try:
            model = spec.open()
            if joined and hasattr(model, "to"):
                model.to(distributed.default_device())
            return encode_shards(
                model,
                input_path,
                out_dir,
                shard_size,
                model_name=spec.model,
                batch_size=settings.batch_size,
                max_length=settings.max_length,
                normalize=settings.normalize,
            )
        finally:
            if joined:
                distributed.shutdown()

    def close(self) -> None:
        self._models.clear()
