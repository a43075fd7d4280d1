"""Types shared across packages (one definition each). Torch-free."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # numpy is imported where arrays are made: the CLI's parser reads these types without it
    import numpy as np

EncodeFn = Callable[[list[str]], "np.ndarray"]
"""sentences -> embeddings (N, D): what every evaluator, the MTEB adapter and retrieval take."""


@runtime_checkable
class Encoder(Protocol):
    """What every command, the service, the evaluators, the index and a teacher take: a model opened by
    ``sentcl.modeling.open_model`` (a sentcl, sentence-transformers, plain Hugging Face, ONNX or dual folder).

    ``max_length`` has one meaning everywhere: the inference truncation in tokens that ``encode`` applies
    when it is given none (a training run's truncation is the config's ``data.max_length``).
    """

    #: the Hugging Face tokenizer that ``encode`` uses
    tokenizer: Any

    @property
    def embedding_dim(self) -> int:
        """D, the width of what ``encode`` returns."""
        ...

    @property
    def max_length(self) -> int:
        """Inference truncation in tokens."""
        ...

    def encode(
        self,
        sentences: str | Sequence[str],
        batch_size: int = ...,
        normalize: bool = False,
        convert_to_numpy: bool = True,
        show_progress: bool = False,
        max_length: int | None = None,
        normalize_embeddings: bool | None = None,
    ) -> Any:
        """Embed in input order: (N, D), or (D,) for one string. ``normalize_embeddings``: sentence-transformers'
        name of ``normalize``, accepted as well."""
        ...

    def similarity(self, a: Any, b: Any) -> np.ndarray:
        """Cosine similarity of every a against every b: (len(a), len(b))."""
        ...


__all__ = ["EncodeFn", "Encoder"]
