"""The training loop, in named phases: setup -> data -> model + method -> optimizer/resume -> steps -> evaluation.

Every ``eval_steps`` the dev score (STS-B dev by default) is computed and the best model is kept in
``<output_dir>/best`` (as the SimCSE paper does); ``checkpoint-<step>`` folders make ``--resume`` continue
from the last saved step with the same data order, RNG streams and schedule. Under ``torchrun`` each rank
encodes its slice of the global batch and ``sentcl.distributed`` gathers the embeddings (with gradients),
so the objective sees every rank's negatives; only rank 0 writes files and evaluates.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from sentcl import distributed
from sentcl.atomic import atomic_write_text
from sentcl.config import ConfigError, TrainConfig, to_dict
from sentcl.data.readers import Corpus
from sentcl.data.sampler import batches, batches_without_duplicates, epoch_permutation, example_key
from sentcl.data.sources import read_training_data
from sentcl.data.streaming import StreamingCorpus, collate_cached
from sentcl.evaluation.alignment_uniformity import alignment_uniformity
from sentcl.evaluation.runner import check_dev_task, check_tasks, dev_score, evaluate
from sentcl.interop.model_card import write_run_card
from sentcl.methods import Method, build_method, method_spec
from sentcl.modeling.build import build_encoder
from sentcl.modeling.dual import DualEncoder, load_encoder
from sentcl.modeling.mlm_head import attach_mlm_head
from sentcl.objectives.mlm import add_mlm
from sentcl.paths import data_file, resolve_data_dir
from sentcl.training.allocator import fix_mmap_threshold
from sentcl.training.checkpoint import (
    STATE_FILE,
    atomic_dir_write,
    load_latest_state,
    prune_checkpoints,
    recover_run_folder,
    rng_state,
    save_state,
    set_rng_state,
)
from sentcl.training.gradcache import gradcache_step
from sentcl.training.optim import build_optimizer, linear_schedule
from sentcl.training.precision import autocast, check_precision, grad_scaler, resolve_device
from sentcl.training.provenance import write_provenance
from sentcl.training.run_folder import file_fingerprint, prepare_output_dir
from sentcl.training.step import (
    TrainingDiverged,
    augment_tokens,
    check_finite_grad_norm,
    check_finite_loss,
    check_finite_weights,
    embed_views,
    make_batch,
    mlm_step_loss,
)
from sentcl.training.tracking import Tracker, check_report_to

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
    """Append-only JSON lines: one line per log step and per evaluation (rank 0 only)."""

    def __init__(self, path: Path, enabled: bool = True) -> None:
        self.path, self.enabled = path, enabled

    def write(self, **record: Any) -> None:
        if self.enabled:
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")


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


def _encode_fn(model: nn.Module, batch_size: int):
    return lambda sentences: model.encode(sentences, batch_size=batch_size)


def _finite_or_none(value: Any) -> Any:
    """NaN and infinities (a collapsed model's correlation) become null: strict JSON, never a bare NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite_or_none(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_or_none(v) for v in value]
    return value


def _check_run_folder(out: Path, cfg: TrainConfig, resume: bool, main: bool, train_path: Path) -> list[str]:
    """Rank 0: refuse an output_dir that is unusable, a model, or another run; on --resume, the config
    changes that break it. Returns the safe changes, logged."""
    if not main:
        return []
    changes = prepare_output_dir(out, cfg, resume, train_path)
    for change in changes:
        logger.info("--resume with a changed setting: %s", change)
    return changes


def train(cfg: TrainConfig, resume: bool = False) -> TrainResult:
    """Train a sentence encoder as ``cfg`` says; returns where it went and how it scored."""
    # ---- phase 1: setup and the checks that must fail before any work
    tcfg = cfg.training
    is_dist = distributed.init_from_env()
    world, rank, main = distributed.world_size(), distributed.rank(), distributed.is_main_process()
    data_dir = resolve_data_dir(cfg.data.data_dir)
    check_tasks(cfg.eval.final_tasks)
    check_dev_task(cfg.eval.dev_task, data_dir)  # pairs:FILE / retrieval:DIR: read once, before any work
    spec = method_spec(cfg)
    train_path = Path(cfg.data.train_file)
    if not train_path.is_absolute():
        train_path = data_file(data_dir, cfg.data.train_file)
    out = Path(tcfg.output_dir)
    if tcfg.num_threads:
        torch.set_num_threads(tcfg.num_threads)
    if tcfg.gradient_cache_chunk:
        fix_mmap_threshold()  # keeps the resident set at one chunk's activations (sentcl.training.allocator)
    device = distributed.default_device() if is_dist else resolve_device(tcfg.device)
    check_precision(tcfg.precision, device)
    global_batch = tcfg.batch_size * world
    reader = cfg.data.reader or spec.reader
    if cfg.data.streaming and reader != "lines":
        raise ConfigError(
            f"data.streaming reads plain text files (reader 'lines'); {cfg.objective.name} uses reader {reader!r}"
        )
    if tcfg.gradient_cache_chunk and cfg.objective.mlm_weight > 0:
        raise ConfigError(
            "training.gradient_cache_chunk cannot be combined with objective.mlm_weight > 0: the MLM loss "
            "needs its own forward pass with a graph over the whole batch"
        )
    config_changes = _check_run_folder(out, cfg, resume, main, train_path)
    check_report_to(tcfg.report_to)  # wandb / mlflow requested but not installed: fail before any work

    # ---- phase 2: data
    corpus: Corpus
    if cfg.data.streaming:
        corpus = StreamingCorpus(train_path, cfg.data.cache_dir, cfg.data.max_examples)
    else:
        corpus = read_training_data(reader, train_path, cfg.data.max_examples, cfg.data.use_neutral)
    if len(corpus) < global_batch:
        raise ValueError(
            f"training file {train_path} has {len(corpus)} examples, fewer than one batch "
            f"(training.batch_size={tcfg.batch_size}{f' x {world} processes' if world > 1 else ''})"
        )
    if main:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / "config.json", json.dumps(to_dict(cfg), indent=2) + "\n")
    metrics = MetricsLog(out / "metrics.jsonl", enabled=main)
    if main:
        write_provenance(out, to_dict(cfg), tcfg.seed, device)
    tracker = Tracker(tcfg.report_to, out, to_dict(cfg), enabled=main)
    logger.info("read %d examples from %s (skipped: %s)", len(corpus), train_path, corpus.skipped)
    fingerprint = file_fingerprint(train_path) if main and train_path.is_file() else None
    metrics.write(
        event="data",
        path=str(train_path),
        examples=len(corpus),
        skipped=corpus.skipped,
        fingerprint=fingerprint,
    )

    # ---- phase 3: model and method (identical initialisation on every rank, then per-rank dropout streams)
    _seed_everything(tcfg.seed)
    model = build_encoder(cfg.model).to(device)
    method = build_method(cfg, corpus, model.tokenizer)
    if len(method.examples) < global_batch:
        raise ValueError(
            f"{cfg.objective.name} uses {len(method.examples)} examples of {train_path}, "
            f"fewer than one batch ({global_batch})"
        )
    # a streaming corpus collates cached token ids (tokenised once, on disk) when the views are plain copies
    cached_tokens = isinstance(corpus, StreamingCorpus) and method.views_are_copies
    if cached_tokens:
        assert isinstance(corpus, StreamingCorpus)
        corpus.tokenize(model.tokenizer, model.max_length)
        built = corpus.examples.built_tokens
        logger.info("token ids of %s %s", train_path, "cached" if built else "read from the cache")
    mlm_model = None
    if cfg.objective.mlm_weight > 0:
        f = model.f if isinstance(model, DualEncoder) else model
        mlm_model = attach_mlm_head(f, cfg.model.name_or_path, cfg.objective.mlm_new_head).to(device)
    trainable = nn.ModuleDict({"encoder": model, **({"mlm": mlm_model} if mlm_model is not None else {})})
    _seed_everything(tcfg.seed + rank)
    encode = _encode_fn(model, cfg.eval.batch_size)
    start_results = None
    if cfg.eval.compare_with_start and main:
        start_file = out / "start_results.json"
        if start_file.is_file():
            start_results = json.loads(start_file.read_text(encoding="utf-8"))
        else:
            logger.info("evaluating the starting model on %s", ", ".join(cfg.eval.final_tasks))
            start_results = evaluate(
                encode, data_dir, cfg.eval.final_tasks, transfer_protocol=cfg.eval.transfer_protocol
            )
            start_file.write_text(json.dumps(start_results, indent=2) + "\n", encoding="utf-8")

    # ---- phase 4: optimizer, schedule, resume
    steps_per_epoch = len(epoch_batches(method, cfg, 0, global_batch, world))
    if world > 1 and steps_per_epoch * global_batch < len(method.examples):
        left_out = len(method.examples) - steps_per_epoch * global_batch
        logger.info(
            "%d examples per epoch left out: the partial last global batch (%d processes)", left_out, world
        )
        metrics.write(event="data", left_out_per_epoch=left_out, reason="partial global batch")
    total_steps = tcfg.epochs * steps_per_epoch
    if tcfg.max_steps is not None:
        total_steps = min(total_steps, tcfg.max_steps)
    optimizer = build_optimizer(trainable, tcfg.learning_rate, tcfg.weight_decay, tcfg.fused_optimizer)
    scheduler = linear_schedule(optimizer, tcfg.warmup_steps, total_steps)
    scaler = grad_scaler(tcfg.precision, device)
    state: dict[str, Any] = {
        "global_step": 0,
        "epoch": 0,
        "batch_in_epoch": 0,
        "best_score": None,
        "best_step": None,
    }
    if resume:
        found = load_latest_state(out)
        if found is None:
            raise FileNotFoundError(f"--resume: no checkpoint-<step> folder with {STATE_FILE} in {out}")
        ckpt, payload = found
        trainable.load_state_dict(payload["model"])
        optimizer.load_state_dict(payload["optimizer"])
        scheduler.load_state_dict(payload["scheduler"])
        scaler.load_state_dict(payload["scaler"])
        set_rng_state(payload["rng"][rank] if isinstance(payload["rng"], list) else payload["rng"])
        state.update(payload["state"])
        logger.info("resumed from %s at step %d", ckpt, state["global_step"])
        metrics.write(
            event="resume", checkpoint=str(ckpt), step=state["global_step"], config_changes=config_changes
        )

    def save_checkpoint() -> None:
        rngs = distributed.all_gather_object(rng_state())  # every rank's dropout stream, in rank order
        if not main:
            return
        check_finite_weights(trainable, state["global_step"])

        def write(tmp: Path) -> None:
            model.save_pretrained(tmp / "model")
            save_state(
                {
                    "model": trainable.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(),
                    "scaler": scaler.state_dict(),
                    "rng": rngs,
                    "state": dict(state),
                },
                tmp / STATE_FILE,
            )

        atomic_dir_write(out / f"checkpoint-{state['global_step']}", write)
        prune_checkpoints(out, KEEP_CHECKPOINTS)
        recover_run_folder(out)  # stale temporaries of an earlier interrupted write

    def geometry() -> dict[str, float]:
        """alignment/uniformity on STS-B dev, when tracked (the paper's Figure 2 trajectory)."""
        if not cfg.eval.track_alignment_uniformity:
            return {}
        result = alignment_uniformity(encode, data_dir, split="dev")
        return {"alignment": result["alignment"], "uniformity": result["uniformity"]}

    def save_best(folder: Path, results: dict[str, Any] | None = None) -> None:
        """The best model with its model card (README.md); ``results`` once the final evaluation ran."""
        if results is None:
            model.save_pretrained(folder)
        write_run_card(
            folder,
            to_dict(cfg),
            out,
            out / "best",
            steps=state["global_step"],
            train_examples=len(method.examples),
            best_step=state["best_step"],
            results=results,
        )

    def run_dev_eval() -> None:
        if main:
            rng = rng_state()  # evaluation must not shift the training RNG streams
            score = dev_score(encode, data_dir, cfg.eval.dev_task)
            extra = geometry()
            set_rng_state(rng)
            step = state["global_step"]
            finite = math.isfinite(score)  # a NaN score (diverged or collapsed model) is never the best
            improved = finite and (state["best_score"] is None or score > state["best_score"])
            metrics.write(
                event="eval",
                step=step,
                **{cfg.eval.dev_task: score if finite else None},
                **extra,
                best=improved,
            )
            if finite:
                tracker.log_eval(step, {cfg.eval.dev_task: score, **extra})
            note = (" (best)" if improved else "") if finite else " (not finite: never the best)"
            level = logging.INFO if finite else logging.WARNING
            logger.log(level, "step %d: %s = %.2f%s", step, cfg.eval.dev_task, score, note)
            if improved:
                check_finite_weights(model, step)
                state["best_score"], state["best_step"] = score, step
                atomic_dir_write(out / "best", save_best)
        distributed.barrier()

    # ---- phase 5: steps
    if main and cfg.eval.track_alignment_uniformity and state["global_step"] == 0:
        rng = rng_state()
        start_geometry = geometry()
        metrics.write(event="geometry", step=0, **start_geometry)
        tracker.log_eval(0, start_geometry)
        set_rng_state(rng)
    trainable.train()
    mlm_generator = torch.Generator().manual_seed(tcfg.seed)
    bar = tqdm(
        total=total_steps, initial=state["global_step"], disable=not (tcfg.progress and main), desc="train"
    )
    window_start, window_sentences = time.perf_counter(), 0
    while state["global_step"] < total_steps:
        method.set_epoch(state["epoch"])
        for index in epoch_batches(method, cfg, state["epoch"], global_batch, world)[
            state["batch_in_epoch"] :
        ]:
            method.reseed(tcfg.seed, state["global_step"])
            local = index[rank * tcfg.batch_size :][: tcfg.batch_size]
            examples = [method.examples[i] for i in local]
            if cached_tokens:
                batch = collate_cached(corpus, local, method.num_views, model.tokenizer)  # type: ignore[arg-type]
            else:
                batch = make_batch(examples, method, model)
            batch = augment_tokens(batch, method, len(examples))
            batch = {k: v.to(device) for k, v in batch.items()}
            meta = {
                k: distributed.all_gather(v.to(device))
                for k, v in (method.meta(examples) if method.meta else {}).items()
            }
            if 0 < tcfg.gradient_cache_chunk < len(examples):
                outputs = gradcache_step(
                    model,
                    batch,
                    method,
                    len(examples),
                    tcfg.gradient_cache_chunk,
                    tcfg.precision,
                    device,
                    scaler,
                    objective=lambda z, meta=meta: method.objective(distributed.gather_views(z), **meta),
                )
            else:
                with autocast(tcfg.precision, device):
                    z = embed_views(model, batch, method, len(examples))  # (B_local, V, D)
                    mlm = None
                    if mlm_model is not None:
                        mlm_generator.manual_seed((tcfg.seed * 1_000_003 + state["global_step"]) * 64 + rank)
                        mlm = mlm_step_loss(
                            mlm_model, model.tokenizer, batch, cfg.objective.mlm_probability, mlm_generator
                        )
                z = distributed.gather_views(z.float())  # (B_global, V, D), gradients reach this rank's rows
                outputs = method.objective(z, **meta)  # the loss in fp32 whatever the forward's precision
                if mlm is not None:
                    outputs = add_mlm(outputs, mlm.float(), cfg.objective.mlm_weight)
                scaler.scale(outputs["loss"]).backward()
            check_finite_loss(outputs["loss"], state["global_step"] + 1, scheduler.get_last_lr()[0])
            distributed.sync_gradients(trainable)
            if tcfg.max_grad_norm > 0:
                scaler.unscale_(optimizer)
                norm = torch.nn.utils.clip_grad_norm_(trainable.parameters(), tcfg.max_grad_norm)
                if not scaler.is_enabled():  # a scaled fp16 step with inf gradients is skipped by the scaler
                    check_finite_grad_norm(norm, state["global_step"] + 1, scheduler.get_last_lr()[0])
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            state["global_step"] += 1
            state["batch_in_epoch"] += 1
            window_sentences += len(index)
            step = state["global_step"]
            tracker.log_step(step, outputs, scheduler.get_last_lr()[0], len(index))
            if tcfg.log_steps and step % tcfg.log_steps == 0:
                rate = window_sentences / max(time.perf_counter() - window_start, 1e-9)
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
    if tcfg.eval_steps == 0 or state["global_step"] % tcfg.eval_steps != 0:
        run_dev_eval()  # the last step is always a candidate for the best model
    save_checkpoint()
    tracker.close()

    # ---- phase 6: final evaluation of the best model (rank 0)
    result = TrainResult(
        out, state["global_step"], state["best_step"], state["best_score"], {}, start_results
    )
    if main:
        if state["best_step"] is None:
            raise TrainingDiverged(
                f"no evaluation gave a finite {cfg.eval.dev_task} score, so there is no best model; the "
                f"checkpoints in {out} are kept"
            )
        best = load_encoder(str(out / "best")).to(device)
        logger.info(
            "evaluating the best model (step %s) on %s", state["best_step"], ", ".join(cfg.eval.final_tasks)
        )
        result.results = evaluate(
            _encode_fn(best, cfg.eval.batch_size),
            data_dir,
            cfg.eval.final_tasks,
            transfer_protocol=cfg.eval.transfer_protocol,
        )
        summary = {
            "best_step": state["best_step"],
            "best_dev_score": state["best_score"],
            "dev_task": cfg.eval.dev_task,
            "global_step": state["global_step"],
            "results": result.results,
        }
        text = json.dumps(_finite_or_none(summary), indent=2, allow_nan=False)
        atomic_write_text(out / "results.json", text + "\n")
        save_best(out / "best", result.results)  # the card again, now with the final results
    distributed.barrier()
    if is_dist:
        distributed.shutdown()
    return result
