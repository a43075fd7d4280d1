"""sentcl: sentence embeddings by contrastive learning (SimCSE and its family)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sentcl.config import TrainConfig, load_config
from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.version import __version__

if TYPE_CHECKING:
    from sentcl.modeling.encoder import SentenceEncoder


def train(cfg: TrainConfig, resume: bool = False):  # noqa: ANN201 - lazy import keeps `import sentcl` light
    """Train as ``cfg`` says; see sentcl.training.loop.train."""
    from sentcl.interop import mteb_adapter  # noqa: F401  registers the evaluation task "mteb"
    from sentcl.training.loop import train as _train

    return _train(cfg, resume=resume)


def evaluate(
    model: SentenceEncoder,
    tasks: list[str] | None = None,
    data_dir: str | None = None,
    batch_size: int = ENCODE_BATCH_SIZE,
    transfer_protocol: str = "senteval",
) -> dict:
    """Evaluate ``model`` on named tasks (default: the seven STS tasks); see sentcl.evaluation.runner.

    ``transfer_protocol``: "senteval" (SentEval's classifier, the default) or "sklearn" for the transfer tasks.
    """
    from sentcl.evaluation.embedding import evaluation_encode_fn
    from sentcl.evaluation.runner import evaluate as _evaluate
    from sentcl.files.paths import resolve_data_dir
    from sentcl.interop import mteb_adapter  # noqa: F401  registers the evaluation task "mteb"

    return _evaluate(
        evaluation_encode_fn(model, batch_size),  # the one evaluation path, as sentcl eval
        resolve_data_dir(data_dir, ["senteval"]),
        tasks or ["sts"],
        transfer_protocol=transfer_protocol,
    )


def __getattr__(name: str) -> Any:
    """``SentenceEncoder`` and ``open_model`` are imported on first use: reading a config never loads torch."""
    if name == "SentenceEncoder":
        from sentcl.modeling.encoder import SentenceEncoder

        return SentenceEncoder
    if name == "open_model":
        from sentcl.modeling.open import open_model

        return open_model
    raise AttributeError(f"module 'sentcl' has no attribute {name!r}")


__all__ = ["SentenceEncoder", "TrainConfig", "__version__", "evaluate", "load_config", "open_model", "train"]
