"""sentcl in MTEB (mteb 2.x): an encoder adapter, and MTEB's STS tasks filled from the local SentEval files.

``MtebEncoder`` wraps any ``sentences -> (N, D)`` function (a SentenceEncoder's, the ONNX encoder's) in mteb's
encoder protocol (``mteb.models.AbsEncoder``: ``encode(DataLoader, task_metadata=, hf_split=, hf_subset=,
prompt_type=)``, cosine similarity). ``local_sts_tasks`` builds mteb's own task objects (STS12-16,
STSBenchmark, SICK-R) and gives them the test pairs read by ``sentcl.evaluation.sts`` from the SentEval folder
instead of the hub: mteb's evaluation code then scores them offline. STS12-16 are the concatenation of the
year's subsets, as on the hub (SentEval's "all" aggregate). Hub tasks by name: ``run_mteb_tasks``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.config.names import EVAL_TASK_HELP
from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.evaluation.runner import Task, format_mteb_table, register_task
from sentcl.evaluation.senteval_readers import load_sts_task
from sentcl.extras import extra_hint
from sentcl.files.paths import DataNotFoundError
from sentcl.types import EncodeFn

# MTEB task name -> sentcl's STS task name
LOCAL_TASKS = {
    "STS12": "STS12",
    "STS13": "STS13",
    "STS14": "STS14",
    "STS15": "STS15",
    "STS16": "STS16",
    "STSBenchmark": "STSBenchmark",
    "SICK-R": "SICKRelatedness",
}


def _mteb() -> Any:
    try:
        import mteb
    except ImportError as err:
        raise ImportError(f"the mteb package is not installed: {extra_hint('mteb')}") from err
    return mteb


def mteb_encoder(encode: EncodeFn, name: str = "sentcl/model", dim: int | None = None) -> Any:
    """An mteb encoder (``mteb.models.AbsEncoder``) that embeds with ``encode``."""
    _mteb()
    from mteb.models.abs_encoder import AbsEncoder
    from mteb.models.model_meta import ModelMeta, ScoringFunction

    class MtebEncoder(AbsEncoder):
        def __init__(self, model_name: str, revision: str | None = None, **kwargs: Any) -> None:  # noqa: ARG002
            self.model = None
            self.mteb_model_meta = ModelMeta.create_empty(
                {
                    "name": model_name,
                    "embed_dim": dim,
                    "similarity_fn_name": ScoringFunction.COSINE,
                    "framework": ["PyTorch"],
                }
            )

        def encode(
            self, inputs: Any, *, task_metadata: Any, hf_split: str, hf_subset: str, **kwargs: Any
        ) -> np.ndarray:  # noqa: ARG002
            texts = [t for batch in inputs for t in batch["text"]]
            out = np.asarray(encode(texts), dtype=np.float32)
            if out.shape[0] != len(texts):
                raise ValueError(f"encode returned {out.shape[0]} rows for {len(texts)} sentences")
            return out

    return MtebEncoder(name if "/" in name else f"sentcl/{name}")


def local_sts_tasks(data_dir: Path, names: Sequence[str] = tuple(LOCAL_TASKS)) -> list[Any]:
    """mteb's STS task objects with their test split read from the local SentEval folder (no hub access)."""
    mteb = _mteb()
    from datasets import Dataset, DatasetDict

    unknown = [n for n in names if n not in LOCAL_TASKS]
    if unknown:
        raise ValueError(
            f"no local data for MTEB task(s) {', '.join(unknown)}; local: {', '.join(LOCAL_TASKS)}"
        )
    tasks = []
    for name in names:
        pairs = [p for subset in load_sts_task(data_dir, LOCAL_TASKS[name], "test").values() for p in subset]
        task = mteb.get_task(name)
        columns = {"sentence1": [p[0] for p in pairs], "sentence2": [p[1] for p in pairs]}
        split = DatasetDict({"test": Dataset.from_dict({**columns, "score": [float(p[2]) for p in pairs]})})
        task.dataset = {subset: split for subset in task.hf_subsets}
        task.data_loaded = True
        tasks.append(task)
    return tasks


def _run(encoder: Any, tasks: Sequence[Any], batch_size: int) -> dict[str, Any]:
    """{task name: main score x100 (mean over eval splits and subsets), "avg": their mean, "scores": mteb's
    full scores dict per task, subset and split}."""
    out: dict[str, Any] = {}
    details: dict[str, Any] = {}
    for task in tasks:
        scores = {}
        for split in task.metadata.eval_splits:
            for subset, result in task.evaluate(
                encoder, split, encode_kwargs={"batch_size": batch_size}
            ).items():
                scores[f"{subset}/{split}"] = {k: v for k, v in result.items() if isinstance(v, int | float)}
        out[task.metadata.name] = 100.0 * float(np.mean([s["main_score"] for s in scores.values()]))
        details[task.metadata.name] = scores
    out["avg"] = float(np.mean(list(out.values()))) if out else float("nan")
    return {**out, "scores": details}


def evaluate_mteb_local(
    encode: EncodeFn, data_dir: Path, batch_size: int = ENCODE_BATCH_SIZE
) -> dict[str, Any]:
    """The seven STS tasks through mteb's own evaluation, offline; main scores (cosine Spearman) x 100."""
    return _run(mteb_encoder(encode), local_sts_tasks(data_dir), batch_size)


def run_mteb_tasks(
    encode: EncodeFn, names: Sequence[str], batch_size: int = ENCODE_BATCH_SIZE
) -> dict[str, Any]:
    """Any MTEB tasks by name, their data from the hub (needs a network the first time)."""
    mteb = _mteb()
    tasks = list(mteb.get_tasks(tasks=list(names)))
    missing = sorted(set(names) - {t.metadata.name for t in tasks})
    if missing:
        raise ValueError(f"unknown MTEB task(s): {', '.join(missing)}")
    for task in tasks:
        try:
            task.load_data()
        except Exception as err:  # noqa: BLE001 - datasets/hub raise many kinds; the user needs one line
            raise DataNotFoundError(
                f"MTEB task {task.metadata.name}: its data could not be loaded from the hub "
                f"({type(err).__name__}: {err}); offline, `--tasks mteb` runs the STS tasks from local files"
            ) from err
    return _run(mteb_encoder(encode), tasks, batch_size)


register_task(
    Task(
        "mteb",
        EVAL_TASK_HELP["mteb"],
        lambda enc, d, options: evaluate_mteb_local(enc, d),
        format_mteb_table,
    )
)
