"""A training run's pieces beside the step: where and how it runs (``RunSetup``), its counters (``RunState``),
its optimizer (``Optimization``), reading the corpus, opening the run folder, checkpoints and resuming from
them."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from sentcl import distributed
from sentcl.config import TrainConfig, to_dict
from sentcl.data.readers import Corpus
from sentcl.data.sources import read_training_data
from sentcl.data.streaming import StreamingCorpus
from sentcl.files.atomic import atomic_write_json, dumps_strict
from sentcl.files.fingerprint import file_sha256
from sentcl.rng import rng_state, set_rng_state
from sentcl.training.allocator import fix_mmap_threshold
from sentcl.training.checkpoint import (
    STATE_FILE,
    load_latest_state,
    prune_checkpoints,
    recover_run_folder,
    save_state,
    write_checkpoint_dir,
)
from sentcl.training.companion import Companion
from sentcl.training.optim import build_optimizer, linear_schedule
from sentcl.training.precision import grad_scaler
from sentcl.training.provenance import write_provenance
from sentcl.training.run_folder import RunLock, prepare_output_dir
from sentcl.training.step import LossWatch, check_finite_grad_norm, check_finite_loss, check_finite_weights
from sentcl.training.tracking import Tracker
from sentcl.training.validation import Resolved

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
    # the start model in its own pooling (a sentence encoder's folder), where the run pools otherwise:
    # (its pooler, its final-task results)
    start_own: tuple[str, dict[str, Any]] | None = None


@dataclass
class RunState:
    """The counters a checkpoint saves: steps taken, the epoch and position in it, the best dev score."""

    global_step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best_score: float | None = None
    best_step: int | None = None


class MetricsLog:
    """Append-only JSON lines: one line per log step and per evaluation (rank 0 only)."""

    def __init__(self, path: Path, enabled: bool = True) -> None:
        self.path, self.enabled = path, enabled

    def write(self, **record: Any) -> None:
        if self.enabled:
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(dumps_strict(record, indent=None) + "\n")


@dataclass
class RunSetup:
    """Where and how the run executes: processes, device, folders; metrics and tracker once the folder opens."""

    cfg: TrainConfig
    out: Path
    data_dir: Path
    train_path: Path
    device: torch.device
    is_dist: bool
    world: int
    rank: int
    main: bool
    config_changes: list[str]
    metrics: MetricsLog
    tracker: Tracker | None = None
    #: rank 0's lock on the run folder (sentcl.training.run_folder.RunLock), released by ``close``
    lock: RunLock | None = None

    def close(self) -> None:
        """Release the run folder's lock (the run ended, or failed)."""
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    @property
    def global_batch(self) -> int:
        return self.cfg.training.batch_size * self.world


def start_run(cfg: TrainConfig, resume: bool, resolved: Resolved) -> RunSetup:
    """Processes, threads, device; rank 0 checks the output folder (a model, another run, a broken resume) and
    locks it for the run. ``resolved``: the data folder, training file and device that ``validate`` resolved."""
    tcfg = cfg.training
    is_dist = distributed.init_from_env()
    if resolved.data_dir is None or resolved.train_path is None or resolved.device is None:
        raise ValueError("start_run needs validate(cfg)'s resolved paths and device (environment=True)")
    data_dir, train_path = resolved.data_dir, resolved.train_path
    if tcfg.num_threads:
        torch.set_num_threads(tcfg.num_threads)
    if tcfg.gradient_cache_chunk:
        fix_mmap_threshold()  # keeps the resident set at one chunk's activations (sentcl.training.allocator)
    device = distributed.default_device() if is_dist else resolved.device
    out, main = Path(tcfg.output_dir), distributed.is_main_process()
    changes, lock = prepare_output_dir(out, cfg, resume, train_path) if main else ([], None)
    for change in changes:
        logger.info("--resume with a changed setting: %s", change)
    world, rank = distributed.world_size(), distributed.rank()
    metrics = MetricsLog(out / "metrics.jsonl", enabled=main)
    return RunSetup(
        cfg, out, data_dir, train_path, device, is_dist, world, rank, main, changes, metrics, lock=lock
    )


def read_corpus(run: RunSetup, reader: str) -> Corpus:
    """The training examples (streamed from disk with data.streaming); at least one global batch of them."""
    d = run.cfg.data
    if d.streaming:
        corpus: Corpus = StreamingCorpus(run.train_path, d.cache_dir, d.max_examples)
    else:
        corpus = read_training_data(reader, run.train_path, d.max_examples, d.use_neutral)
    if len(corpus) < run.global_batch:
        world = f" x {run.world} processes" if run.world > 1 else ""
        cut = d.max_examples is not None and len(corpus) >= d.max_examples  # the cap, not the file, left them
        where = f"data.max_examples={d.max_examples} leaves" if cut else "has"
        raise ValueError(
            f"training file {run.train_path} {where} {len(corpus)} examples, fewer than one batch "
            f"(training.batch_size={run.cfg.training.batch_size}{world})"
        )
    return corpus


def open_run_folder(run: RunSetup, corpus: Corpus) -> Tracker:
    """Rank 0 writes config.json and provenance.json; the tracker starts; the data's line goes to metrics."""
    cfg = to_dict(run.cfg)
    if run.main:
        run.out.mkdir(parents=True, exist_ok=True)
        atomic_write_json(run.out / "config.json", cfg)
        write_provenance(run.out, cfg, run.cfg.training.seed, run.device)
    run.tracker = Tracker(run.cfg.training.report_to, run.out, cfg, enabled=run.main)
    logger.info("read %d examples from %s (skipped: %s)", len(corpus), run.train_path, corpus.skipped)
    path = run.train_path
    digest = file_sha256(path) if run.main and path.is_file() else None
    run.metrics.write(
        event="data",
        path=str(path),
        examples=len(corpus),
        skipped=corpus.skipped,
        sha256=digest,
        world_size=run.world,
        global_batch=run.global_batch,
    )
    return run.tracker


@dataclass
class Optimization:
    """AdamW, the warm-up + linear decay schedule and (fp16) the loss scaler, over ``trainable``."""

    trainable: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    scaler: torch.amp.GradScaler
    max_grad_norm: float
    #: stops the run when the loss stays exactly constant (it cannot learn)
    watch: LossWatch = field(default_factory=LossWatch)

    @classmethod
    def build(
        cls, trainable: nn.Module, cfg: TrainConfig, total_steps: int, device: torch.device
    ) -> Optimization:
        t = cfg.training
        optimizer = build_optimizer(trainable, t.learning_rate, t.weight_decay, t.fused_optimizer)
        scheduler = linear_schedule(optimizer, t.warmup_steps, total_steps)
        return cls(trainable, optimizer, scheduler, grad_scaler(t.precision, device), t.max_grad_norm)

    @property
    def lr(self) -> float:
        return self.scheduler.get_last_lr()[0]

    def step(self, loss: torch.Tensor, step: int) -> None:
        """Apply the accumulated gradients (every process' summed), clipped; refuse a non-finite loss, and a
        loss that has stayed exactly constant (``LossWatch``)."""
        self.watch.observe(check_finite_loss(loss, step, self.lr), step)
        distributed.sync_gradients(self.trainable)
        if self.max_grad_norm > 0:
            self.scaler.unscale_(self.optimizer)
            norm = torch.nn.utils.clip_grad_norm_(self.trainable.parameters(), self.max_grad_norm)
            if not self.scaler.is_enabled():  # a scaled fp16 step with inf gradients is skipped by the scaler
                check_finite_grad_norm(norm, step, self.lr)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)

    def state_dict(self) -> dict[str, Any]:
        return {
            "model": self.trainable.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict(),
        }

    def load_state_dict(self, payload: dict[str, Any]) -> None:
        self.trainable.load_state_dict(payload["model"])
        self.optimizer.load_state_dict(payload["optimizer"])
        self.scheduler.load_state_dict(payload["scheduler"])
        self.scaler.load_state_dict(payload["scaler"])


def save_checkpoint(
    run: RunSetup, state: RunState, model: nn.Module, opt: Optimization, companion: Companion | None
) -> None:
    """``checkpoint-<step>/`` (the model folder + training_state.pt), written atomically; the oldest pruned."""
    rngs = distributed.all_gather_object(rng_state())  # every rank's dropout stream, in rank order
    if not run.main:
        return
    check_finite_weights(opt.trainable, state.global_step)

    def write(tmp: Path) -> None:
        model.save_pretrained(tmp / "model")  # type: ignore[operator]
        payload = {**opt.state_dict(), "rng": rngs, "state": asdict(state)}
        if companion is not None:
            payload["companion"] = companion.state_dict()
        save_state(payload, tmp / STATE_FILE)

    write_checkpoint_dir(run.out / f"checkpoint-{state.global_step}", write)
    prune_checkpoints(run.out, KEEP_CHECKPOINTS)
    recover_run_folder(run.out)  # stale temporaries of an earlier interrupted write


def resume_run(run: RunSetup, opt: Optimization, companion: Companion | None) -> RunState:
    """Load the newest readable checkpoint: weights, optimizer, schedule, scaler, RNG streams, companion."""
    found = load_latest_state(run.out)
    if found is None:
        raise FileNotFoundError(f"--resume: no checkpoint-<step> folder with {STATE_FILE} in {run.out}")
    ckpt, payload = found
    opt.load_state_dict(payload)
    set_rng_state(payload["rng"][run.rank] if isinstance(payload["rng"], list) else payload["rng"])
    if companion is not None:
        companion.load_state_dict(payload["companion"])
    state = RunState(**payload["state"])
    logger.info("resumed from %s at step %d", ckpt, state.global_step)
    run.metrics.write(
        event="resume", checkpoint=str(ckpt), step=state.global_step, config_changes=run.config_changes
    )
    return state
