"""The training loop, in named phases: setup -> data -> model -> optimizer/resume -> steps -> final evaluation.

Every ``eval_steps`` the dev score (STS-B dev by default) is computed and the best model is kept in
``<output_dir>/best`` (as the SimCSE paper does); ``checkpoint-<step>`` folders make ``--resume`` continue
from the last saved step with the same data order, RNG streams and schedule.
"""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from sentcl.config import ConfigError, TrainConfig, to_dict
from sentcl.data.readers import Corpus
from sentcl.data.sampler import batches, batches_without_duplicates, epoch_permutation
from sentcl.data.sources import read_training_data
from sentcl.evaluation.runner import check_tasks, dev_score, evaluate
from sentcl.methods import Method, build_method
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.paths import data_file, resolve_data_dir
from sentcl.training.checkpoint import (
    STATE_FILE,
    atomic_dir_write,
    latest_checkpoint,
    prune_checkpoints,
    rng_state,
    set_rng_state,
)
from sentcl.training.optim import build_optimizer, linear_schedule
from sentcl.training.precision import autocast, check_precision, grad_scaler, resolve_device
from sentcl.training.step import augment_tokens, embed_views, make_batch

logger = logging.getLogger(__name__)
KEEP_CHECKPOINTS = 2


@dataclass
class TrainResult:
    output_dir: Path
    global_step: int
    best_step: int | None
    best_score: float | None
    results: dict[str, Any] = field(default_factory=dict)
    start_results: dict[str, Any] | None = None


class MetricsLog:
    """Append-only JSON lines: one line per log step and per evaluation."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, **record: Any) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _epoch_batches(corpus: Corpus, cfg: TrainConfig, epoch: int) -> list[list[int]]:
    order = epoch_permutation(len(corpus), cfg.training.seed, epoch)
    if cfg.data.no_duplicates_in_batch:
        return batches_without_duplicates(order, corpus.examples, cfg.training.batch_size)
    return batches(order, cfg.training.batch_size)


def _encoder_fn(model: SentenceEncoder, batch_size: int):
    return lambda sentences: model.encode(sentences, batch_size=batch_size)


def train(cfg: TrainConfig, resume: bool = False) -> TrainResult:
    """Train a sentence encoder as ``cfg`` says; returns where it went and how it scored."""
    # ---- phase 1: setup and checks that must fail before any work
    tcfg = cfg.training
    data_dir = resolve_data_dir(cfg.data.data_dir)
    check_tasks(cfg.eval.final_tasks)
    try:
        method: Method = build_method(cfg)
    except KeyError as err:
        raise ConfigError(f"objective.name: {err.args[0]}") from None
    train_path = Path(cfg.data.train_file)
    if not train_path.is_absolute():
        train_path = data_file(data_dir, cfg.data.train_file)
    out = Path(tcfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if tcfg.num_threads:
        torch.set_num_threads(tcfg.num_threads)
    device = resolve_device(tcfg.device)
    check_precision(tcfg.precision, device)
    _seed_everything(tcfg.seed)
    metrics = MetricsLog(out / "metrics.jsonl")
    (out / "config.json").write_text(json.dumps(to_dict(cfg), indent=2) + "\n", encoding="utf-8")

    # ---- phase 2: data
    corpus = read_training_data(cfg.data.reader or method.reader, train_path, cfg.data.max_examples)
    if len(corpus) < tcfg.batch_size:
        raise ValueError(
            f"training file {train_path} has {len(corpus)} examples, fewer than one batch "
            f"(training.batch_size={tcfg.batch_size})"
        )
    logger.info("read %d examples from %s (skipped: %s)", len(corpus), train_path, corpus.skipped)
    metrics.write(event="data", path=str(train_path), examples=len(corpus), skipped=corpus.skipped)
    steps_per_epoch = len(_epoch_batches(corpus, cfg, 0))
    total_steps = tcfg.epochs * steps_per_epoch
    if tcfg.max_steps is not None:
        total_steps = min(total_steps, tcfg.max_steps)

    # ---- phase 3: model
    mcfg = cfg.model
    model = SentenceEncoder.from_pretrained(
        mcfg.name_or_path,
        pooler=mcfg.pooler,
        mlp_only_train=mcfg.mlp_only_train,
        max_length=mcfg.max_length,
        dropout=mcfg.dropout,
    ).to(device)
    encode = _encoder_fn(model, cfg.eval.batch_size)
    start_results = None
    start_file = out / "start_results.json"
    if cfg.eval.compare_with_start:
        if start_file.is_file():
            start_results = json.loads(start_file.read_text(encoding="utf-8"))
        else:
            logger.info("evaluating the starting model on %s", ", ".join(cfg.eval.final_tasks))
            start_results = evaluate(encode, data_dir, cfg.eval.final_tasks)
            start_file.write_text(json.dumps(start_results, indent=2) + "\n", encoding="utf-8")

    # ---- phase 4: optimizer, schedule, resume
    optimizer = build_optimizer(model, tcfg.learning_rate, tcfg.weight_decay)
    scheduler = linear_schedule(optimizer, tcfg.warmup_steps, total_steps)
    scaler = grad_scaler(tcfg.precision, device)
    state = {"global_step": 0, "epoch": 0, "batch_in_epoch": 0, "best_score": None, "best_step": None}
    if resume:
        ckpt = latest_checkpoint(out)
        if ckpt is None:
            raise FileNotFoundError(f"--resume: no checkpoint-<step> folder with {STATE_FILE} in {out}")
        saved = SentenceEncoder.from_pretrained(str(ckpt / "model"))
        model.load_state_dict(saved.state_dict())
        del saved
        payload = torch.load(ckpt / STATE_FILE, weights_only=False, map_location="cpu")
        optimizer.load_state_dict(payload["optimizer"])
        scheduler.load_state_dict(payload["scheduler"])
        set_rng_state(payload["rng"])
        if "scaler" in payload:
            scaler.load_state_dict(payload["scaler"])
        state.update(payload["state"])
        logger.info("resumed from %s at step %d", ckpt, state["global_step"])
        metrics.write(event="resume", checkpoint=str(ckpt), step=state["global_step"])

    def save_checkpoint() -> None:
        step = state["global_step"]

        def write(tmp: Path) -> None:
            model.save_pretrained(tmp / "model")
            payload = {
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "rng": rng_state(),
                "scaler": scaler.state_dict(),
                "state": dict(state),
            }
            torch.save(payload, tmp / STATE_FILE)

        atomic_dir_write(out / f"checkpoint-{step}", write)
        prune_checkpoints(out, KEEP_CHECKPOINTS)

    def run_dev_eval() -> None:
        rng = rng_state()  # evaluation must not shift the training RNG streams
        score = dev_score(encode, data_dir, cfg.eval.dev_task)
        set_rng_state(rng)
        step = state["global_step"]
        improved = state["best_score"] is None or score > state["best_score"]
        metrics.write(event="eval", step=step, **{cfg.eval.dev_task: score}, best=improved)
        logger.info("step %d: %s = %.2f%s", step, cfg.eval.dev_task, score, " (best)" if improved else "")
        if improved:
            state["best_score"], state["best_step"] = score, step
            atomic_dir_write(out / "best", model.save_pretrained)

    # ---- phase 5: steps
    model.train()
    bar = tqdm(total=total_steps, initial=state["global_step"], disable=not tcfg.progress, desc="train")
    window_start, window_sentences = time.perf_counter(), 0
    while state["global_step"] < total_steps:
        epoch_batches = _epoch_batches(corpus, cfg, state["epoch"])
        for index in epoch_batches[state["batch_in_epoch"] :]:
            examples = [corpus.examples[i] for i in index]
            batch = augment_tokens(make_batch(examples, method, model), method, len(examples))
            batch = {k: v.to(device) for k, v in batch.items()}
            with autocast(tcfg.precision, device):
                z = embed_views(model, batch, method, len(examples))  # (B, V, D)
            outputs = method.objective(z.float())  # the loss in fp32 whatever the forward's precision
            scaler.scale(outputs["loss"]).backward()
            if tcfg.max_grad_norm > 0:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), tcfg.max_grad_norm)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            state["global_step"] += 1
            state["batch_in_epoch"] += 1
            window_sentences += len(examples)
            step = state["global_step"]
            if tcfg.log_steps and step % tcfg.log_steps == 0:
                elapsed = time.perf_counter() - window_start
                rate = window_sentences / max(elapsed, 1e-9)
                scalars = {k: float(v.detach()) for k, v in outputs.items()}
                metrics.write(
                    event="train",
                    step=step,
                    epoch=state["epoch"],
                    lr=scheduler.get_last_lr()[0],
                    sentences_per_s=rate,
                    **scalars,
                )
                bar.set_postfix(loss=f"{scalars['loss']:.4f}", sent_s=f"{rate:.1f}")
                window_start, window_sentences = time.perf_counter(), 0
            bar.update(1)
            if tcfg.eval_steps and step % tcfg.eval_steps == 0:
                run_dev_eval()
            if tcfg.save_steps and step % tcfg.save_steps == 0 and step < total_steps:
                save_checkpoint()
            if step >= total_steps:
                break
        else:
            state["epoch"] += 1
            state["batch_in_epoch"] = 0
    bar.close()
    step = state["global_step"]
    if tcfg.eval_steps == 0 or step % tcfg.eval_steps != 0:
        run_dev_eval()  # the last step is always a candidate for the best model
    save_checkpoint()

    # ---- phase 6: final evaluation of the best model
    best = SentenceEncoder.from_pretrained(str(out / "best"))
    logger.info(
        "evaluating the best model (step %s) on %s", state["best_step"], ", ".join(cfg.eval.final_tasks)
    )
    results = evaluate(_encoder_fn(best, cfg.eval.batch_size), data_dir, cfg.eval.final_tasks)
    summary = {
        "best_step": state["best_step"],
        "best_dev_score": state["best_score"],
        "dev_task": cfg.eval.dev_task,
        "global_step": step,
        "results": results,
    }
    (out / "results.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return TrainResult(out, step, state["best_step"], state["best_score"], results, start_results)
