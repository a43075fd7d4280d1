"""sentcl: sentence embeddings by contrastive learning (SimCSE and its family)."""

from sentcl.config import TrainConfig, load_config
from sentcl.modeling.encoder import SentenceEncoder

__version__ = "0.1.0"


def train(cfg: TrainConfig, resume: bool = False):  # noqa: ANN201 - lazy import keeps `import sentcl` light
    """Train as ``cfg`` says; see sentcl.training.loop.train."""
    from sentcl.training.loop import train as _train

    return _train(cfg, resume=resume)


def evaluate(
    model: SentenceEncoder,
    tasks: list[str] | None = None,
    data_dir: str | None = None,
    batch_size: int = 128,
    transfer_protocol: str = "senteval",
) -> dict:
    """Evaluate ``model`` on named tasks (default: the seven STS tasks); see sentcl.evaluation.runner.

    ``transfer_protocol``: "senteval" (SentEval's classifier, the default) or "sklearn" for the transfer tasks.
    """
    from sentcl.evaluation.embedding import evaluation_encode_fn
    from sentcl.evaluation.runner import evaluate as _evaluate
    from sentcl.paths import resolve_data_dir

    return _evaluate(
        evaluation_encode_fn(model, batch_size),  # the one evaluation path, as sentcl eval
        resolve_data_dir(data_dir),
        tasks or ["sts"],
        transfer_protocol=transfer_protocol,
    )


__all__ = ["SentenceEncoder", "TrainConfig", "evaluate", "load_config", "train"]
