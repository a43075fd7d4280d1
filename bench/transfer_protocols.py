"""Transfer tasks under both protocols (SentEval's PyTorch classifier, scikit-learn's) and both modes.

For each mode (fast = SimCSE's fasttest settings, test = its test settings) and each task, the two protocols
run one after the other on the same cached embeddings (the order alternates from task to task), each timed
on its own: the classifier's time, not the encoder's. Embeddings are computed once per distinct sentence and
may be cached in ``--cache PREFIX`` (.npy + .json, outside the repository) to be reused between runs.
The JSON is rewritten after every task, so a run cut short keeps what it finished.

    OMP_NUM_THREADS=1 python -m bench.transfer_protocols --model all-MiniLM-L6-v2 --pooler avg \\
        --cache /tmp/minilm_avg --modes fast,test
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import harness
from bench.common import format_table, set_threads, write_json
from sentcl.evaluation.embedding import EvaluationEncoder
from sentcl.evaluation.transfer import PROTOCOLS, TRANSFER_TASKS, evaluate_transfer

# test mode: the quick tasks first, so that a run stopped early still covers most of them
TEST_ORDER = ("CR", "TREC", "MRPC", "SST2", "MR", "SUBJ", "MPQA")
REFERENCE = Path(__file__).resolve().parent.parent / "tests" / "evaluation"


def reference_run(task: str, model: str, data_dir: str | None) -> dict[str, Any]:
    """Fast mode on ``task`` by the hand-written SentEval reference of the tests, end to end: its own batcher
    (SimCSE's ``avg``: the Hugging Face backbone, mean over the mask, not normalised), sort, features and
    classifier; nothing shared with the path it checks but the readers."""
    sys.path.insert(0, str(REFERENCE))
    from senteval_reference import (
        reference_avg_batcher,
        reference_inner_kfold,
        reference_kfold,
        reference_split,
        senteval_sorted,
    )

    from sentcl.files.paths import resolve_model_path

    encode = reference_avg_batcher(resolve_model_path(model))

    from sentcl.evaluation.senteval_classifier import FAST_MODE, L2_GRID, SEED
    from sentcl.evaluation.senteval_readers import (
        BINARY_FILES,
        read_binary_task,
        read_mrpc,
        read_sst2,
        read_trec,
    )
    from sentcl.files.paths import resolve_data_dir

    root = resolve_data_dir(data_dir)
    x = {}
    if task in BINARY_FILES or task in ("SST2", "TREC"):
        splits = (
            {"all": read_binary_task(root, task)}
            if task in BINARY_FILES
            else read_sst2(root)
            if task == "SST2"
            else read_trec(root)
        )
        for s, split in splits.items():
            texts, labels = senteval_sorted(split.texts, split.labels.tolist())
            x[s] = (encode(texts), np.array(labels))
    elif task == "MRPC":
        for s, split in read_mrpc(root).items():
            a, b, labels = senteval_sorted(split.first, split.second, split.labels.tolist())
            u, v = encode(a), encode(b)
            x[s] = (np.c_[np.abs(u - v), u * v], np.array(labels))  # SentEval's MRPC features
    else:
        raise ValueError(f"no reference for task {task!r}")
    n_classes = int(max(y.max() for _, y in x.values())) + 1
    start = time.perf_counter()
    if task in BINARY_FILES:
        acc, dev, reg = reference_inner_kfold(*x["all"], FAST_MODE, L2_GRID, SEED, n_classes)
    elif task == "SST2":
        dev, acc, reg = reference_split(x["train"], x["dev"], x["test"], FAST_MODE, L2_GRID, SEED, n_classes)
    else:
        dev, acc, reg, _ = reference_kfold(*x["train"], *x["test"], FAST_MODE, L2_GRID, SEED, n_classes)
    return {"acc": acc, "dev_acc": dev, "l2reg": reg, "seconds": time.perf_counter() - start}


class CachedEncoder(EvaluationEncoder):
    """The evaluation's own encode path (``sentcl.evaluation.embedding``: the embedding before the output
    normalisation, each distinct sentence once), its table optionally kept on disk between runs."""

    def __init__(self, model: str, pooler: str | None, cache: str | None, batch_size: int) -> None:
        super().__init__(None, batch_size)
        self.model_name, self.pooler, self.cache = model, pooler, cache
        if cache and Path(cache + ".npy").is_file():
            texts = json.loads(Path(cache + ".json").read_text(encoding="utf-8"))
            self.add(texts, np.load(cache + ".npy"))

    def embed(self, sentences: list[str]) -> np.ndarray:
        if self.model is None:
            from sentcl.modeling.open import load_encoder

            self.model = load_encoder(self.model_name, pooler=self.pooler)
        return super().embed(sentences)

    def add(self, sentences: Sequence[str], embeddings: np.ndarray) -> None:
        super().add(sentences, embeddings)
        if self.model is not None:  # new rows (not the ones just read from the cache)
            self._write_cache()

    def _write_cache(self) -> None:
        if not self.cache:
            return
        Path(self.cache).parent.mkdir(parents=True, exist_ok=True)
        np.save(self.cache + ".tmp.npy", self.table)
        Path(self.cache + ".tmp.json").write_text(json.dumps(list(self.rows)), encoding="utf-8")
        os.replace(self.cache + ".tmp.npy", self.cache + ".npy")
        os.replace(self.cache + ".tmp.json", self.cache + ".json")


def _save(path: Path, payload: dict[str, Any]) -> None:
    tmp = write_json(path.with_suffix(".tmp"), payload)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="all-MiniLM-L6-v2")
    p.add_argument("--pooler", default="avg")
    p.add_argument("--cache", help="Embedding cache prefix (PREFIX.npy, PREFIX.json); created if missing.")
    p.add_argument("--modes", default="fast,test", help="Comma-separated: fast, test (empty: none).")
    p.add_argument("--protocols", default=",".join(PROTOCOLS))
    p.add_argument("--tasks", default=",".join(TRANSFER_TASKS))
    p.add_argument("--data-dir")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--output", type=Path, default=Path("bench/results/transfer_protocols.json"))
    p.add_argument(
        "--reference",
        default="",
        help="Comma-separated tasks also run in fast mode by the tests' hand-written SentEval "
        "reference (its own avg batcher on the Hugging Face backbone; autograd, torch.optim, global seeds), "
        "after the modes (--pooler avg only).",
    )
    args = p.parse_args(argv)
    if set(filter(None, args.modes.split(","))) - {"fast", "test"}:
        p.error(f"--modes: choose from fast, test; got {args.modes!r}")
    set_threads(args.threads)
    encode = CachedEncoder(args.model, args.pooler, args.cache, args.batch_size)
    protocols = args.protocols.split(",")
    tasks = args.tasks.split(",")
    payload: dict[str, Any] = {
        **harness.header("transfer_protocols", args, args.threads, argv=argv),
        "model": args.model,
        "pooler": args.pooler,
        "results": {},
    }
    turn = 0
    for mode in filter(None, args.modes.split(",")):
        order = [t for t in (TEST_ORDER if mode == "test" else TRANSFER_TASKS) if t in tasks]
        for task in order:
            encode_before = encode.encode_s
            runs = protocols[turn % 2 :] + protocols[: turn % 2]  # alternate who goes first
            turn += 1
            for protocol in runs:
                start = time.perf_counter()
                res = evaluate_transfer(
                    encode, args.data_dir, tasks=(task,), fast=mode == "fast", protocol=protocol
                )
                seconds = time.perf_counter() - start - (encode.encode_s - encode_before)
                encode_before = encode.encode_s
                row = {k: v for k, v in res[task].items() if not isinstance(v, list)}
                payload["results"].setdefault(mode, {}).setdefault(protocol, {})[task] = {
                    **row,
                    "seconds": seconds,
                }
                print(f"{mode} {protocol} {task}: acc {res[task]['acc']:.2f} in {seconds:.1f} s", flush=True)
                _save(args.output, payload)
    for task in filter(None, args.reference.split(",")):
        ref = reference_run(task, args.model, args.data_dir)
        payload["results"].setdefault("fast", {}).setdefault("reference", {})[task] = ref
        print(f"fast reference {task}: acc {ref['acc']:.2f} (L2 {ref['l2reg']}) in {ref['seconds']:.1f} s")
        _save(args.output, payload)
    rows = []
    for mode, by_protocol in payload["results"].items():
        for protocol, by_task in by_protocol.items():
            accs = [by_task[t]["acc"] for t in TRANSFER_TASKS if t in by_task]
            avg = float(np.mean(accs)) if len(accs) == len(TRANSFER_TASKS) else float("nan")
            cells = [f"{by_task[t]['acc']:.2f}" if t in by_task else "-" for t in TRANSFER_TASKS]
            secs = sum(r["seconds"] for r in by_task.values())
            rows.append([mode, protocol, *cells, f"{avg:.2f}", f"{secs:.0f}"])
    print(format_table(["mode", "protocol", *TRANSFER_TASKS, "avg", "classifier s"], rows))
    payload["encode_s"] = encode.encode_s
    _save(args.output, payload)
    return payload


if __name__ == "__main__":
    main()
