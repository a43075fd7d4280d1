"""A static student of any teacher, start to end (``sentcl distill-static``; the recipe ``distill_static``).

1. Distil: the teacher's vector of every vocabulary token, PCA to ``dim``, SIF weights (static_distill.py).
2. Fit (unless ``fit`` is None): the table is trained on the teacher's cached vectors of a corpus
   (static_fit.py); the teacher's vectors come from the teacher cache (methods/teacher_cache.py), shared with
   the layer students' runs on the same sentences. ``head: weights`` fits the weighted form with it
   (static_weights.py: the mean's weights from a small attention over the rows).
3. Remove the common components (``components`` > 0): the corpus sentence vectors' mean and top directions,
   folded into the table (static_components.py).
4. Write: a sentence-transformers folder with a StaticEmbedding module (the weighted form: its own module and
   its tables beside the table, modeling/static_weighted.py) and a Normalize module (modeling/static.py), and
   ``sentcl_static.json`` beside it: the settings, the corpus, the losses, the wall and CPU time of each step.

The corpus is the offline English corpus (``data.reader offline_english``: every distinct sentence of the data
folder outside the STS test sets and STS-B dev, in its fixed shuffled order), the first ``max_sentences``.
``build_static_student`` is the function other code calls (bench/frontier.py builds its points with it).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.config.static_recipe import StaticRecipe, load_static_recipe
from sentcl.config.teacher import TeacherConfig
from sentcl.methods.static_components import common_components, remove_components
from sentcl.methods.static_distill import (
    check_token_teacher,
    corpus_probabilities,
    distill_table,
    kept_tokens,
    sif_weights,
    zipf_probabilities,
)
from sentcl.methods.static_fit import MeanHead, fit_static
from sentcl.methods.static_weights import weights_head
from sentcl.methods.teacher_cache import distinct_texts, teacher_cache_dir, teacher_vectors
from sentcl.modeling.tokenizer_checks import quiet_rust_panics

logger = logging.getLogger(__name__)
SUMMARY_FILE = "sentcl_static.json"


def corpus_sentences(data_dir: Path, max_sentences: int | None) -> list[str]:
    """The offline English corpus (the training reader's order), its first ``max_sentences``, distinct."""
    from sentcl.data.offline_english import read_offline_english

    return distinct_texts(read_offline_english(data_dir, max_sentences).examples)[0]


def token_lists(encoder: Any, sentences: list[str]) -> list[list[int]]:  # noqa: ANN401 - an Encoder
    """Each sentence's token ids as the static model will see them: the teacher's tokenizer, no specials."""
    rust = encoder.tokenizer.backend_tokenizer
    rust = type(rust).from_str(rust.to_str())  # a copy: padding and truncation off, the teacher's untouched
    rust.no_padding()
    rust.no_truncation()
    with quiet_rust_panics():
        return [e.ids for e in rust.encode_batch(sentences, add_special_tokens=False)]


def _weights(recipe: StaticRecipe, vocab_size: int, tokens: list[list[int]] | None) -> np.ndarray | None:
    if recipe.weighting == "none":
        return None
    if recipe.weighting == "zipf":
        return sif_weights(zipf_probabilities(vocab_size), recipe.sif_a)
    if tokens is None:
        raise ValueError("weighting 'corpus' needs the corpus: give a data folder")
    return sif_weights(corpus_probabilities(tokens, vocab_size), recipe.sif_a)


def teacher_matrix(teacher: str, sentences: list[str], cache: str | None) -> np.ndarray:
    """The teacher's vectors of ``sentences`` (N, D): from the teacher cache, encoded into it when missing."""
    vectors = teacher_vectors(TeacherConfig(path=teacher), sentences, teacher_cache_dir(cache))
    return vectors.sample(vectors.rows)  # (N, D), every row in order


def build_static_student(
    recipe: StaticRecipe | None = None, data_dir: str | Path | None = None, overwrite: bool = False
) -> Path:
    """Distil ``recipe.teacher`` (any folder ``open_model`` opens) into a static folder ``recipe.output_dir``:
    new or empty, or with ``overwrite`` an earlier model sentcl wrote (``sentcl.files.output``; never the
    teacher's folder); no recipe: the built-in ``distill_static``."""
    from sentcl.files.output import claim_folder, model_input
    from sentcl.files.paths import resolve_data_dir
    from sentcl.modeling.open import open_model
    from sentcl.modeling.static import save_static

    recipe = recipe or load_static_recipe()
    teacher, out = recipe.teacher, recipe.output_dir
    inputs = model_input(teacher, "TEACHER")
    claim_folder(Path(out), "model", "OUTPUT", inputs, replace=True, overwrite=overwrite)  # before any work
    times: dict[str, float] = {}
    wall, cpu = time.perf_counter(), time.process_time()
    encoder = open_model(teacher)
    check_token_teacher(encoder, teacher)
    kept_tokens(
        encoder.tokenizer, recipe.skip_pattern
    )  # a pattern that leaves no token: refused before the work
    needs_corpus = recipe.fitted or recipe.weighting == "corpus" or recipe.components > 0
    sentences = corpus_sentences(resolve_data_dir(data_dir), recipe.max_sentences) if needs_corpus else []
    tokens = token_lists(encoder, sentences) if needs_corpus else None
    weights = _weights(recipe, len(encoder.tokenizer), tokens)
    key = "pca_dim" if recipe.pca_dim else "dim (--dim)"  # the recipe key, or its option, that set the width
    distilled = distill_table(encoder, recipe.pca_dim or recipe.dim, weights, recipe.skip_pattern, option=key)
    times.update(distill_seconds=time.perf_counter() - wall, distill_cpu_seconds=time.process_time() - cpu)
    table, losses, weighted = distilled.table, [], None
    if recipe.fitted and tokens is not None:
        wall, cpu = time.perf_counter(), time.process_time()
        targets = teacher_matrix(teacher, sentences, recipe.teacher_cache)
        times.update(
            teacher_seconds=time.perf_counter() - wall, teacher_cpu_seconds=time.process_time() - cpu
        )
        fit = dataclasses.replace(recipe.fit, dim=recipe.dim)  # the map narrows a wider table to dim
        head = (
            weights_head(recipe.attention_heads, recipe.attention_dim)
            if recipe.head == "weights"
            else MeanHead
        )
        result = fit_static(distilled.table, distilled.pca, tokens, targets, fit, head)
        table, losses = result.table, result.losses
        weighted = result.model.tables() if recipe.head == "weights" else None
        times.update(fit_seconds=result.seconds, fit_cpu_seconds=result.cpu_seconds)
    removed = None
    if recipe.components > 0 and tokens is not None:
        wall, cpu = time.perf_counter(), time.process_time()
        found = common_components(table if weighted is None else weighted, tokens, recipe.components)
        table = remove_components(table, found, 1.0 if weighted is None else weighted.total_weight)
        weighted = None if weighted is None else weighted.with_table(table)
        times.update(
            components_seconds=time.perf_counter() - wall, components_cpu_seconds=time.process_time() - cpu
        )
        removed = {"components": recipe.components, "explained_variance_ratio": found.explained}
    summary = {
        "teacher": teacher,
        "recipe": dataclasses.asdict(recipe),
        "corpus_sentences": len(sentences),
        "explained_variance_ratio": float(distilled.pca.explained_variance_ratio.sum()),
        "losses": losses,
        "removed_components": removed,
        "times": times,
    }
    card = f"# Static student of {teacher}\n\nBuilt by `sentcl distill-static`; settings in {SUMMARY_FILE}.\n"
    rust = encoder.tokenizer.backend_tokenizer
    folder = save_static(
        out,
        rust,
        table,
        card=card,
        extra={SUMMARY_FILE: summary},
        weighted=weighted,
        inputs=inputs,
        overwrite=overwrite,
    )
    logger.info("static student of %s written to %s", teacher, folder)
    return folder


def read_summary(folder: str | Path) -> dict[str, Any]:
    return json.loads((Path(folder) / SUMMARY_FILE).read_text(encoding="utf-8"))


__all__ = ["SUMMARY_FILE", "build_static_student", "corpus_sentences"]
