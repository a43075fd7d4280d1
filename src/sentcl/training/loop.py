"""The training loop, top to bottom: validate -> run folder and data -> model + method -> optimizer/resume ->
steps -> final evaluation.

Every ``eval_steps`` the dev score (STS-B dev by default) is computed and the best model is kept in
``<output_dir>/best`` (as the SimCSE paper does; ``sentcl.training.evaluation_hooks``); ``checkpoint-<step>``
folders make ``--resume`` continue from the last saved step with the same data order, RNG streams and schedule
(``sentcl.training.run``). A step is ``BatchSource`` (the data side) then ``forward_loss`` (the model side,
plain or GradCache) then the optimizer. Under ``torchrun`` each rank encodes its slice of the global batch and
``sentcl.distributed`` gathers the embeddings (with gradients), so the objective sees every rank's negatives;
only rank 0 writes files and evaluates.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from sentcl import distributed
from sentcl.config import TrainConfig
from sentcl.data.sampler import batches, batches_without_duplicates, epoch_permutation, example_key
from sentcl.defaults import OUTPUT_DIM_PCA_SENTENCES
from sentcl.methods.base import Method, build_method, method_spec
from sentcl.modeling.build import build_encoder
from sentcl.rng import step_seed
from sentcl.training.batch_source import BatchSource
from sentcl.training.evaluation_hooks import Evaluations
from sentcl.training.run import (
    Optimization,
    RunSetup,
    RunState,
    TrainResult,
    open_run_folder,
    read_corpus,
    resume_run,
    save_checkpoint,
    start_run,
)
from sentcl.training.step import forward_loss
from sentcl.training.validation import validate

__all__ = ["TrainResult", "epoch_batches", "train"]
logger = logging.getLogger(__name__)
#: seeds per step for an objective's token loss (the MLM masks): one stream per process
TOKEN_SEED_STREAMS = 64


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def epoch_batches(
    method: Method, cfg: TrainConfig, epoch: int, global_batch: int, world: int = 1
) -> list[list[int]]:
    """The global batches of one epoch (indices into method.examples); the same on every rank.

    Under several processes the epoch's last, partial global batch is left out: every rank needs a full slice.
    """
    n, seed = len(method.examples), cfg.training.seed
    if method.sampler == "contiguous":
        from sentcl.data.ordered import contiguous_batches

        out = contiguous_batches(n, global_batch, seed, epoch, method.examples)  # drops pairless blocks
    elif cfg.data.no_duplicates_in_batch:
        order = epoch_permutation(n, seed, epoch)
        out = batches_without_duplicates(order, [example_key(e) for e in method.examples], global_batch)
    else:
        out = batches(epoch_permutation(n, seed, epoch), global_batch)
    return [b for b in out if len(b) == global_batch] if world > 1 else out


def train(cfg: TrainConfig, resume: bool = False) -> TrainResult:
    """Train a sentence encoder as ``cfg`` says; returns where it went and how it scored."""
    resolved = validate(cfg)  # every config rule, before any work; the data folder, training file, device
    run = start_run(cfg, resume, resolved)  # rank 0 locks the run folder until the run ends
    try:
        return train_in_folder(run, resume)
    finally:
        run.close()


def train_in_folder(run: RunSetup, resume: bool) -> TrainResult:
    """The run, in its locked folder: data, model and method, optimizer, steps, the final evaluation."""
    cfg, t = run.cfg, run.cfg.training
    corpus = read_corpus(run, cfg.data.reader or method_spec(cfg).reader)
    tracker = open_run_folder(run, corpus)

    # ---- model and method: identical initialisation on every rank, then per-rank dropout streams
    _seed_everything(t.seed)
    model = build_encoder(cfg.model, fit_sentences(cfg, corpus)).to(run.device)
    method = build_method(cfg, corpus, model.tokenizer)
    if len(method.examples) < run.global_batch:
        raise ValueError(
            f"{cfg.objective.name} uses {len(method.examples)} examples of {run.train_path}, "
            f"fewer than one batch ({run.global_batch})"
        )
    source = BatchSource(corpus, method, model, run.device)
    trainable = nn.ModuleDict({"encoder": model, **method.objective.attach(model)}).to(run.device)
    _seed_everything(t.seed + run.rank)
    evals = Evaluations(run, model, len(method.examples))
    starts = (evals.start_results(), evals.start_own_pooling())  # as the run pools it; in its own pooling

    # ---- optimizer, schedule, resume
    total_steps = count_steps(run, method)
    opt = Optimization.build(trainable, cfg, total_steps, run.device)
    companion = method.companion
    state = resume_run(run, opt, companion) if resume else RunState()

    # ---- steps
    evals.start_geometry(state)
    trainable.train()
    log = StepLog(run, total_steps, state.global_step)
    while state.global_step < total_steps:
        method.set_epoch(state.epoch)
        for index in epoch_batches(method, cfg, state.epoch, run.global_batch, run.world)[
            state.batch_in_epoch :
        ]:
            method.reseed(t.seed, state.global_step)
            batch = source(index[run.rank * t.batch_size :][: t.batch_size])  # this rank's slice
            meta = batch.meta
            if companion is not None:
                meta = {**meta, **companion.objective_inputs(model, batch.tokens, batch.num_examples)}
            chunk = t.gradient_cache_chunk if 0 < t.gradient_cache_chunk < batch.num_examples else None
            outputs = forward_loss(
                model,
                batch.tokens,
                method,
                batch.num_examples,
                meta=meta,
                chunk_size=chunk,  # GradCache's chunks, or None: one forward over the batch
                precision=t.precision,
                device=run.device,
                scaler=opt.scaler,
                token_seed=step_seed(t.seed, state.global_step, run.rank, TOKEN_SEED_STREAMS),
                length_buckets=t.length_buckets,
                packed_tokens=t.packed_tokens,
            )
            opt.step(outputs["loss"], state.global_step + 1)
            if companion is not None:
                companion.after_step(model)
            state.global_step += 1
            state.batch_in_epoch += 1
            step = state.global_step
            log.step(state, outputs, opt.lr, len(index))
            if t.eval_steps and step % t.eval_steps == 0:
                evals.dev(state)
            if t.save_steps and step % t.save_steps == 0 and step < total_steps:
                save_checkpoint(run, state, model, opt, companion)
            if step >= total_steps:
                break
        else:
            state.epoch += 1
            state.batch_in_epoch = 0
    log.close()
    if t.eval_steps == 0:
        evals.keep_last(state)  # no dev evaluation: the last step's model is the one kept
    elif state.global_step % t.eval_steps != 0:
        evals.dev(state)  # the last step is always a candidate for the best model
    save_checkpoint(run, state, model, opt, companion)
    tracker.close()

    # ---- final evaluation of the best model (rank 0)
    result = TrainResult(run.out, state.global_step, state.best_step, state.best_score, {}, *starts)
    if run.main:  # a run shorter than the constant-loss stop that never learnt says so (LossWatch.verdict)
        result.results = evals.final(state, opt.watch.verdict())
    distributed.barrier()
    if run.is_dist:
        distributed.shutdown()
    return result


def fit_sentences(cfg: TrainConfig, corpus: Any) -> list[str] | None:
    """The first training sentences ``model.output_dim_init: pca`` is fitted on and ``model.student_ffn``
    scores its neurons on (every sentence of an example counts: a pair gives two); None when neither is
    asked for."""
    pca = cfg.model.output_dim is not None and cfg.model.output_dim_init == "pca"
    if not pca and cfg.model.student_ffn is None:
        return None
    sentences: list[str] = []
    for i in range(len(corpus.examples)):
        example = corpus.examples[i]
        if isinstance(example, str):
            items: list[Any] = [example]
        elif isinstance(example, tuple | list):
            items = list(example)
        else:  # a record (next-sentence and ordered examples): its text
            items = [getattr(example, "text", None)]
        sentences += [s for s in items if isinstance(s, str) and s.strip()]
        if len(sentences) >= OUTPUT_DIM_PCA_SENTENCES:
            break
    return sentences[:OUTPUT_DIM_PCA_SENTENCES]


def count_steps(run: RunSetup, method: Method) -> int:
    """Steps of the run: epochs × batches per epoch, capped at max_steps; logs what a partial batch leaves out."""
    t = run.cfg.training
    steps_per_epoch = len(epoch_batches(method, run.cfg, 0, run.global_batch, run.world))
    left_out = len(method.examples) - steps_per_epoch * run.global_batch
    if run.world > 1 and left_out > 0:
        logger.info(
            "%d examples per epoch left out: the partial last global batch (%d processes)",
            left_out,
            run.world,
        )
        run.metrics.write(event="data", left_out_per_epoch=left_out, reason="partial global batch")
    total = t.epochs * steps_per_epoch
    return total if t.max_steps is None else min(total, t.max_steps)


class StepLog:
    """Per step: the tracker, the progress bar, and every ``log_steps`` a metrics line with the throughput."""

    def __init__(self, run: RunSetup, total_steps: int, initial: int) -> None:
        self.run, self.every = run, run.cfg.training.log_steps
        enabled = run.cfg.training.progress and run.main
        self.bar = tqdm(total=total_steps, initial=initial, disable=not enabled, desc="train")
        self.start, self.sentences = time.perf_counter(), 0

    def step(self, state: RunState, outputs: dict[str, Any], lr: float, sentences: int) -> None:
        step = state.global_step
        self.sentences += sentences
        assert self.run.tracker is not None
        self.run.tracker.log_step(step, outputs, lr, sentences)
        if self.every and step % self.every == 0:
            rate = self.sentences / max(time.perf_counter() - self.start, 1e-9)
            scalars = {k: float(v.detach()) for k, v in outputs.items()}
            self.run.metrics.write(
                event="train", step=step, epoch=state.epoch, lr=lr, sentences_per_s=rate, **scalars
            )
            self.bar.set_postfix(loss=f"{scalars['loss']:.4f}", sent_s=f"{rate:.1f}")
            self.start, self.sentences = time.perf_counter(), 0
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()
