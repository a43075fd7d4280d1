"""Building each candidate of a shrink run, one resumable step at a time (``sentcl.shrink.steps``).

- ``teacher-vectors``: the teacher's vectors of the corpus (the offline English corpus of the data folder, its
  first ``corpus_sentences``), through the teacher cache; the layer students' distillation and the static
  students' fit read the same cache entry.
- ``lK-layers``: the layer choice (``sentcl.shrink.layer_choice``), each cut scored by its neighbour agreement
  with the teacher (``sentcl.evaluation.teacher_agreement``) on the corpus' first ``choice_texts`` sentences:
  the choice never sees the evaluation data, which then scores the students fairly.
- ``lK``: ``distill_mse`` (Reimers & Gurevych 2020) from those layers, the recipe ``distill_minilm_l3``'s
  settings with the teacher, layers, corpus size and steps of the run (a training run folder under ``work/``:
  a step killed mid-way resumes from its last checkpoint), its best model copied into ``candidates/lK``;
  ``l1-ffnF`` likewise from the one-layer choice, its feed-forward narrowed to F neurons (``model.student_ffn``).
- ``...-int8``: ``sentcl.interop.onnx.export_onnx(int8=True)`` of the teacher or of a layer student.
- ``static-W``: ``sentcl.methods.static_student.build_static_student`` at width W; ``static-weighted-W`` the
  weighted form (the static recipe's ``head: weights``).

Every model folder is written whole through a temporary sibling (``sentcl.files.output``), so a step killed
mid-way leaves no half folder; its record (``steps/NAME.json``) is written last.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.files.fingerprint import tree_fingerprint
from sentcl.shrink.plan import Budget, Candidate
from sentcl.shrink.steps import Steps

CANDIDATES = "candidates"
WORK = "work"
DISTILL_RECIPE = "distill_minilm_l3"


@dataclass
class Context:
    """What every step reads: the teacher (its folder and fingerprint), the run folder, the data folder, the
    teacher cache, the budget, the seed and the step records."""

    teacher: str
    teacher_digest: str
    root: Path
    data_dir: Path
    cache: str | None
    budget: Budget
    seed: int
    steps: Steps
    built: dict[str, dict[str, Any]] = field(default_factory=dict)

    def folder(self, name: str) -> Path:
        return self.root / CANDIDATES / name

    def base_inputs(self) -> dict[str, Any]:
        return {"teacher": self.teacher_digest, "seed": self.seed}


def corpus(ctx: Context) -> list[str]:
    from sentcl.methods.static_student import corpus_sentences

    return corpus_sentences(ctx.data_dir, ctx.budget.corpus_sentences)


def teacher_corpus_vectors(ctx: Context, sentences: list[str]) -> np.ndarray:
    """The teacher's (N, D) vectors of the corpus: encoded once into the teacher cache (a step)."""
    from sentcl.methods.static_student import teacher_matrix

    inputs = {**ctx.base_inputs(), "corpus": ctx.budget.corpus_sentences}
    ctx.steps.run(
        "teacher-vectors", inputs, lambda: {"rows": len(teacher_matrix(ctx.teacher, sentences, ctx.cache))}
    )
    return teacher_matrix(ctx.teacher, sentences, ctx.cache)  # a reuse of the finished cache entry


def choose(ctx: Context, cand: Candidate, layers: int, sentences: list[str], rows: np.ndarray) -> list[int]:
    """The layer choice step of ``cand``: the kept layers."""
    from sentcl.evaluation.labelfree.measures import neighbour_agreement
    from sentcl.shrink.layer_choice import choose_layers

    texts, teacher = sentences[: ctx.budget.choice_texts], rows[: ctx.budget.choice_texts]

    def work() -> dict[str, Any]:
        def score(encoder: Any) -> float:
            return neighbour_agreement(np.asarray(encoder.encode(texts, normalize=True)), teacher)

        best, scored = choose_layers(ctx.teacher, cand.layers or 1, score, layers)
        return {"layers": best, "scored": scored, "measure": "neighbour_agreement@10 on the corpus"}

    inputs = {
        **ctx.base_inputs(),
        "keep": cand.layers,
        "texts": len(texts),
        "corpus": ctx.budget.corpus_sentences,
    }
    return ctx.steps.run(f"l{cand.layers}-layers", inputs, work)["layers"]  # shared by the narrow student


def train_layer_student(ctx: Context, cand: Candidate, kept: list[int]) -> dict[str, Any]:
    """The distillation step of a layer student into ``candidates/NAME``."""
    b = ctx.budget
    inputs = {**ctx.base_inputs(), "layers": kept, "steps": b.layer_steps, "batch": b.batch_size}
    inputs["corpus"] = b.corpus_sentences
    if cand.ffn is not None:  # the full-width students keep the inputs they had before the narrow one
        inputs["ffn"] = cand.ffn

    def work() -> dict[str, Any]:
        from sentcl.config import TrainConfig, load_config
        from sentcl.config.builtin import resolve_recipe
        from sentcl.training.checkpoint import list_checkpoints
        from sentcl.training.loop import train

        run_dir = ctx.root / WORK / f"{cand.name}-run"
        every = max(1, b.layer_steps // 3)
        batch = min(b.batch_size, b.corpus_sentences)
        epochs = math.ceil(b.layer_steps / (b.corpus_sentences // batch))  # the steps asked, past one epoch
        overrides = [
            f"model.name_or_path={ctx.teacher}",
            f"model.teacher={ctx.teacher}",
            f"model.student_layers=[{', '.join(map(str, kept))}]",
            f"data.train_file={ctx.data_dir}",
            f"data.max_examples={b.corpus_sentences}",
            f"training.output_dir={run_dir}",
            f"training.max_steps={b.layer_steps}",
            f"training.batch_size={batch}",
            f"training.epochs={epochs}",
            f"training.warmup_steps={min(20, b.layer_steps // 10)}",
            f"training.eval_steps={every}",
            f"training.save_steps={every}",
            f"training.seed={ctx.seed}",
            "eval.final_tasks=[]",
            "eval.compare_with_start=false",
        ]
        if cand.ffn is not None:
            overrides.append(f"model.student_ffn={cand.ffn}")
        if ctx.cache is not None:
            overrides.append(f"model.teacher_cache={ctx.cache}")
        cfg = load_config(TrainConfig, resolve_recipe(DISTILL_RECIPE), overrides)
        resume = run_dir.is_dir() and bool(list_checkpoints(run_dir))
        if run_dir.is_dir() and not resume:  # a run of this step killed before its first checkpoint
            shutil.rmtree(run_dir)
        result = train(cfg, resume=resume)
        copy_model(result.output_dir / "best", ctx.folder(cand.name))
        return {
            "folder": str(ctx.folder(cand.name)),
            "digest": tree_fingerprint(ctx.folder(cand.name)),
            "layers": kept,
            **({"ffn": cand.ffn} if cand.ffn is not None else {}),
            "best_step": result.best_step,
            "dev_score": result.best_score,
            "resumed": resume,
        }

    return ctx.steps.run(cand.name, inputs, work)


def copy_model(source: Path, target: Path, extra: dict[str, str] | None = None) -> Path:
    """``source`` copied whole into ``target`` (an earlier copy of this run replaced), through a temporary;
    ``extra``: files (name -> text) written into the copy, replacing the source's of that name."""
    from sentcl.files.output import write_folder

    def fill(tmp: Path) -> None:
        shutil.copytree(source, tmp, dirs_exist_ok=True)
        for name, text in (extra or {}).items():
            (tmp / name).write_text(text, encoding="utf-8")

    return write_folder(target, "model", fill, str(target), overwrite=True)


def export_int8(ctx: Context, cand: Candidate, source: str, source_digest: str) -> dict[str, Any]:
    """The int8 export step of the teacher or a layer student into ``candidates/NAME``."""
    from sentcl.interop.onnx import export_onnx

    def work() -> dict[str, Any]:
        out = export_onnx(source, ctx.folder(cand.name), int8=True, overwrite=True)
        return {"folder": str(out), "digest": tree_fingerprint(out), "source": cand.source}

    return ctx.steps.run(cand.name, {**ctx.base_inputs(), "source": source_digest}, work)


def build_static(ctx: Context, cand: Candidate) -> dict[str, Any]:
    """The static student step at width ``cand.dim``, of the form ``cand.head``, into ``candidates/NAME``."""
    b = ctx.budget
    inputs = {**ctx.base_inputs(), "dim": cand.dim, "steps": b.static_steps, "corpus": b.corpus_sentences}
    inputs["batch"] = b.batch_size
    if cand.head != "mean":  # the one-table steps keep the inputs they had before the weighted form
        inputs["head"] = cand.head

    def work() -> dict[str, Any]:
        from sentcl.config.static_recipe import load_static_recipe
        from sentcl.methods.static_student import build_static_student

        overrides = [
            f"teacher={ctx.teacher}",
            f"output_dir={ctx.folder(cand.name)}",
            f"dim={cand.dim}",
            f"head={cand.head}",
            f"max_sentences={b.corpus_sentences}",
            f"fit.steps={b.static_steps}",
            f"fit.batch_size={min(b.batch_size, b.corpus_sentences)}",
            f"fit.seed={ctx.seed}",
            f"fit.warmup_steps={min(100, b.static_steps // 10)}",
            f"components={min(load_static_recipe().components, cand.dim - 1)}",  # a width of 1 keeps its axis
        ]
        if ctx.cache is not None:
            overrides.append(f"teacher_cache={ctx.cache}")
        recipe = load_static_recipe(None, overrides)
        out = build_static_student(recipe, ctx.data_dir, overwrite=True)
        return {"folder": str(out), "digest": tree_fingerprint(out)}

    return ctx.steps.run(cand.name, inputs, work)


def build_candidate(ctx: Context, cand: Candidate, layers: int) -> dict[str, Any]:
    """Build ``cand`` (its sources built before it, in plan order); its step result."""
    if cand.family == "layers":
        sentences = corpus(ctx)
        rows = teacher_corpus_vectors(ctx, sentences)
        kept = choose(ctx, cand, layers, sentences, rows)
        found = train_layer_student(ctx, cand, kept)
    elif cand.family == "int8":
        if cand.source == "teacher":
            found = export_int8(ctx, cand, ctx.teacher, ctx.teacher_digest)
        else:
            upstream = ctx.built[cand.source or ""]
            found = export_int8(ctx, cand, upstream["folder"], upstream["digest"])
    else:
        teacher_corpus_vectors(ctx, corpus(ctx))
        found = build_static(ctx, cand)
    ctx.built[cand.name] = {**found, "family": cand.family}
    return found


__all__ = ["CANDIDATES", "Context", "build_candidate", "copy_model"]
