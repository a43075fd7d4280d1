"""The evaluations of a run: the starting model (``eval.compare_with_start``; and, where the run pools a sentence
encoder otherwise than its own folder does, the start model in its own pooling, always), the dev score every
``eval_steps`` with the best model kept in ``best/`` (as the SimCSE paper does; the saving is
``training/best_model.py``), the alignment/uniformity trajectory, and the final evaluation of the best model
(rank 0; evaluation never shifts the training RNG). A final task that is the dev task is not evaluated again
on ``best/``: its result is the dev evaluation of the best step (the same model), kept in memory."""

from __future__ import annotations

import logging
import math
from typing import Any

from torch import nn

from sentcl import distributed
from sentcl.evaluation.alignment_uniformity import alignment_uniformity
from sentcl.evaluation.embedding import evaluation_encode_fn
from sentcl.evaluation.labelfree.selection import unlabelled_dev
from sentcl.evaluation.runner import dev_evaluation, evaluate, expand
from sentcl.files.read import read_json, write_json_strict
from sentcl.modeling.encode_adapter import encode_fn
from sentcl.modeling.locate import locate
from sentcl.modeling.open import open_model
from sentcl.rng import preserved_rng
from sentcl.training.best_model import best_folder, keep_best, write_card
from sentcl.training.run import RunSetup, RunState
from sentcl.training.start_columns import START_OWN_POOLING_FILE, START_RESULTS_FILE
from sentcl.training.step import TrainingDiverged, check_finite_weights

logger = logging.getLogger(__name__)

# folders that carry their own pooling (a sentence encoder): sentence-transformers' Pooling, sentcl.json
OWN_POOLING_KINDS = ("sentence-transformers", "sentcl")


def _named(tasks: list[str]) -> str:
    """The final tasks for the log; an empty list says so instead of ending the line with nothing."""
    return (
        ", ".join(tasks)
        if tasks
        else "no tasks (eval.final_tasks is empty): results.json keeps the dev score"
    )


class Evaluations:
    """What the loop evaluates and saves, given the run, the model being trained and the number of examples."""

    def __init__(self, run: RunSetup, model: nn.Module, train_examples: int) -> None:
        self.run, self.model, self.train_examples = run, model, train_examples
        self.cfg = run.cfg
        self.encode = encode_fn(model, self.cfg.eval.batch_size)
        # the dev task's whole result at the best step (None: not known in this process, e.g. after a resume)
        self.best_dev_result: dict[str, Any] | None = None
        # eval.unlabelled_file: a label-free measure picks best/ instead of eval.dev_task
        self.unlabelled = unlabelled_dev(self.cfg.eval, run.data_dir) if run.main else None

    def start_results(self) -> dict[str, Any] | None:
        """The starting model's final-task results (once per run folder; rank 0), when compared with."""
        e, out = self.cfg.eval, self.run.out
        if not (e.compare_with_start and self.run.main):
            return None
        start_file = out / START_RESULTS_FILE
        if start_file.is_file():
            return read_json(start_file, what="the starting model's results")
        logger.info("evaluating the starting model on %s", _named(e.final_tasks))
        encode = evaluation_encode_fn(self.model, e.batch_size)  # the one evaluation path, as sentcl eval
        results = evaluate(encode, self.run.data_dir, e.final_tasks, transfer_protocol=e.transfer_protocol)
        write_json_strict(start_file, results)
        return results

    def start_own_pooling(self) -> tuple[str, dict[str, Any]] | None:
        """The start model with its own pooling on the final tasks (once per run folder; rank 0), when it is a
        sentence encoder (a sentence-transformers or sentcl folder) and the run pools otherwise: the table then
        shows whether training beat the model as its authors use it, not only the re-pooled start."""
        m, e, out = self.cfg.model, self.cfg.eval, self.run.out
        if m.pooler is None or not self.run.main or not e.final_tasks:
            return None  # the folder's own pooler: the start model of compare_with_start is the own one
        if locate(m.name_or_path).kind not in OWN_POOLING_KINDS:
            return None
        own_file = out / START_OWN_POOLING_FILE
        if own_file.is_file():
            saved = read_json(own_file, what="the start model's results in its own pooling")
            return str(saved["pooler"]), saved["results"]
        own = open_model(m.name_or_path).to(self.run.device)
        if own.pooler == m.pooler:
            return None
        logger.info(
            "evaluating the starting model in its own pooling (%s; this run: %s) on %s",
            own.pooler,
            m.pooler,
            _named(e.final_tasks),
        )
        encode = evaluation_encode_fn(own, e.batch_size)  # the one evaluation path, as sentcl eval
        results = evaluate(encode, self.run.data_dir, e.final_tasks, transfer_protocol=e.transfer_protocol)
        write_json_strict(own_file, {"pooler": own.pooler, "results": results})
        return own.pooler, results

    def geometry(self) -> dict[str, float]:
        """alignment/uniformity on STS-B dev, when tracked (the paper's Figure 2 trajectory)."""
        if not self.cfg.eval.track_alignment_uniformity:
            return {}
        result = alignment_uniformity(self.encode, self.run.data_dir, split="dev")
        return {"alignment": result["alignment"], "uniformity": result["uniformity"]}

    def start_geometry(self, state: RunState) -> None:
        if not (self.run.main and self.cfg.eval.track_alignment_uniformity and state.global_step == 0):
            return
        with preserved_rng():
            start = self.geometry()
        self.run.metrics.write(event="geometry", step=0, **start)
        assert self.run.tracker is not None
        self.run.tracker.log_eval(0, start)

    def dev(self, state: RunState) -> None:
        """Score the dev task; a better finite score makes this step's model ``best/`` (rank 0)."""
        if self.run.main:
            task, step = self.dev_name(), state.global_step
            with preserved_rng():  # evaluation must not shift the training RNG streams
                if self.unlabelled is not None:
                    shown, score = self.unlabelled.score(self.model)
                    result = None  # a label-free measure: no dev task's result to reuse
                else:
                    score, result = dev_evaluation(self.encode, self.run.data_dir, task)
                    shown = score
                extra = self.geometry()
            finite = math.isfinite(score)  # a NaN score (diverged or collapsed model) is never the best
            improved = finite and (state.best_score is None or score > state.best_score)
            self.run.metrics.write(
                event="eval", step=step, **{task: shown if finite else None}, **extra, best=improved
            )
            if finite:
                assert self.run.tracker is not None
                self.run.tracker.log_eval(step, {task: shown, **extra})
            note = (" (best)" if improved else "") if finite else " (not finite: never the best)"
            logger.log(
                logging.INFO if finite else logging.WARNING, "step %d: %s = %.4g%s", step, task, shown, note
            )
            if improved:
                check_finite_weights(self.model, step)
                state.best_score, state.best_step = score, step
                self.best_dev_result = result
                keep_best(self.model, self.run, state, self.train_examples)
        distributed.barrier()

    def dev_name(self) -> str:
        """What picks ``best/``: eval.dev_task, or the label-free measure of eval.unlabelled_file."""
        return self.unlabelled.name if self.unlabelled is not None else self.cfg.eval.dev_task

    def keep_last(self, state: RunState) -> None:
        """``eval_steps: 0`` (no dev evaluation): the last step's model is ``best/``, its dev score null."""
        if self.run.main:
            check_finite_weights(self.model, state.global_step)
            state.best_score, state.best_step = None, state.global_step
            self.best_dev_result = None
            keep_best(self.model, self.run, state, self.train_examples)
        distributed.barrier()

    def final(self, state: RunState, stalled: str | None = None) -> dict[str, Any]:
        """Evaluate ``best/`` on the final tasks; write results.json and the card with them (rank 0).
        ``stalled``: a loss that never moved, logged and said in the summary's ``warnings`` beside the results."""
        if stalled:
            logger.warning("%s: %s", self.run.out, stalled)
        cfg, out = self.cfg, self.run.out
        if state.best_step is None:
            raise TrainingDiverged(
                f"no evaluation gave a finite {self.dev_name()} score, so there is no best model; the "
                f"checkpoints in {out} are kept"
            )
        tasks = expand(cfg.eval.final_tasks)
        known = {} if self.best_dev_result is None else {cfg.eval.dev_task: self.best_dev_result}
        known = {task: result for task, result in known.items() if task in tasks}
        rest = [task for task in tasks if task not in known]
        if known:
            logger.info(
                "%s of the best model (step %s): its dev evaluation", ", ".join(known), state.best_step
            )
        computed: dict[str, Any] = {}
        if rest or not known:
            best = open_model(str(best_folder(out))).to(self.run.device)
            logger.info("evaluating the best model (step %s) on %s", state.best_step, _named(rest))
            computed = evaluate(
                evaluation_encode_fn(best, cfg.eval.batch_size),  # the one evaluation path, as sentcl eval
                self.run.data_dir,
                rest,
                transfer_protocol=cfg.eval.transfer_protocol,
            )
        results = {task: known[task] if task in known else computed[task] for task in tasks}
        summary = {
            "best_step": state.best_step,
            "best_dev_score": state.best_score,
            "dev_task": self.dev_name(),
            "global_step": state.global_step,
            "results": results,
        } | ({"warnings": [stalled]} if stalled else {})
        write_json_strict(out / "results.json", summary)
        write_card(
            best_folder(out), self.run, state, self.train_examples, results
        )  # now with the final results
        return results
