"""Where a teacher encodes a corpus into its cache entry (``model.teacher_engine``): in process (the cache's
own encode: ``sentcl.methods.teacher_cache``, on the run's device, shared by the processes of a torchrun), or
on an engine of ``sentcl.engines`` (Ray Data: an actor pool holding the teacher once per actor, on a local Ray
or on the cluster at ``model.teacher_ray_address``).

An engine writes the same shard folder as the in-process encode (the same header, records and hashes), so an
entry written by one is reused or resumed by the other. The engine is opened at the first encode, on rank 0
only (a reused entry starts no Ray), and closed by ``close``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sentcl.config import ConfigError
from sentcl.config.teacher import TeacherConfig

if TYPE_CHECKING:
    from sentcl.engines import EncodeEngine

#: the engine name of the cache's own in-process encode
IN_PROCESS = "local"


@dataclass
class TeacherEngine:
    """``model.teacher_engine`` and ``model.teacher_ray_address``, opened on first use."""

    name: str = IN_PROCESS
    address: str | None = None
    _engine: EncodeEngine | None = field(default=None, repr=False)

    @property
    def in_process(self) -> bool:
        """The cache encodes in this process (and in each process of a torchrun) itself."""
        return self.name == IN_PROCESS

    def _open(self) -> EncodeEngine:
        from sentcl.engines import open_engine
        from sentcl.engines.ray import check_reachable

        if self._engine is None:
            if self.address is not None:  # one line naming the key, within seconds
                try:
                    check_reachable(self.address, option="model.teacher_ray_address")
                except ValueError as err:
                    raise ConfigError(str(err)) from None
            self._engine = open_engine(self.name, self.address)
        return self._engine

    def encode_shards(
        self, teacher: TeacherConfig, texts: Path, vectors: Path, shard_size: int, batch_size: int
    ) -> None:
        """``texts`` (one text a line) encoded by ``teacher`` into the shard folder ``vectors`` (resuming);
        unnormalised, at the teacher's max length, as the in-process encode does."""
        from sentcl.engines import EncodeSettings, ModelSpec
        from sentcl.engines.sources import Source

        spec = ModelSpec(teacher.path, pooler=teacher.pooler)
        settings = EncodeSettings(batch_size, teacher.max_length, normalize=False)
        self._open().encode_shards(spec, Source(str(texts)), vectors, shard_size, settings)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
        self._engine = None
