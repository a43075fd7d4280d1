"""Fit whitening, BERT-flow or PCA on the sentence vectors of a file and attach it to a SentenceEncoder."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sentcl.data.readers import DataFormatError, read_lines, require_file
from sentcl.data.tables import iter_csv_records
from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.modeling.postprocess.pca import raw_vectors  # noqa: F401 - re-exported (its home is pca.py)

logger = logging.getLogger("sentcl")

METHODS = ("whitening", "flow", "pca")


@dataclass(frozen=True)
class PostprocessSettings:
    """What to fit; ``dim`` is whitening's k and PCA's (required there), the flow options follow
    modeling/postprocess/flow.py's defaults; ``center``: PCA's bias −W μ (False: no bias, see modeling/postprocess/pca.py)."""

    method: str
    dim: int | None = None
    epochs: int = 1
    steps: int | None = None
    batch_size: int = 32
    learning_rate: float = 1e-3
    levels: int = 3
    depth: int = 3
    width: int = 32
    seed: int = 0
    max_sentences: int | None = None
    center: bool = True


def read_fit_sentences(paths: Sequence[str | Path], max_sentences: int | None = None) -> list[str]:
    """Sentences of text files (one a line) or .csv files with a header (every field of every row, as
    SimCSE's nli_for_simcse.csv: premise, entailment, contradiction). Blank lines are skipped."""
    sentences: list[str] = []
    for path in map(Path, paths):
        require_file(path, "fit file")
        if path.suffix.lower() == ".csv":
            records = iter_csv_records(path)
            header = next(records, None)
            if header is None:
                raise DataFormatError(
                    f"{path}: empty csv file (expected a header such as sent0,sent1,hard_neg)"
                )
            for lineno, fields in records:
                if fields and len(fields) != len(header[1]):
                    raise DataFormatError(
                        f"{path}:{lineno}: {len(fields)} fields, the header has {len(header[1])}"
                    )
                sentences += [f.strip() for f in fields if f.strip()]
        else:
            sentences += read_lines(path).examples
    if not sentences:
        raise DataFormatError(f"no sentences in {', '.join(map(str, paths))}")
    return sentences[:max_sentences] if max_sentences else sentences


def postprocess_model(
    encoder: Any,
    settings: PostprocessSettings,
    fit_files: Sequence[str | Path],
    batch_size: int = ENCODE_BATCH_SIZE,
    vectors: np.ndarray | None = None,
) -> Any:
    """Fit ``settings.method`` on the vectors of ``fit_files`` and attach it to ``encoder`` (returned).

    ``vectors``: this encoder's ``raw_vectors`` of those sentences when the caller has them already."""
    from sentcl.modeling.postprocess.flow import FlowConfig, fit_flow
    from sentcl.modeling.postprocess.whitening import fit_whitening

    if settings.method not in METHODS:
        raise ValueError(f"unknown post-processing {settings.method!r}; valid: {', '.join(METHODS)}")
    if settings.method == "pca" and settings.dim is None:
        raise ValueError("PCA needs --dim (the number of principal directions to keep)")
    if encoder.postprocess is not None or encoder.flow is not None:
        done = (encoder.postprocess or {}).get("method", "flow")
        raise ValueError(
            f"model {encoder.source} is already post-processed ({done}); fit on the model it was made from"
        )
    sentences = read_fit_sentences(fit_files, settings.max_sentences)
    where = ", ".join(map(str, fit_files))
    logger.info(
        "%s: fitting %s on %d sentences of %s", encoder.source, settings.method, len(sentences), where
    )
    if vectors is None:
        vectors = raw_vectors(encoder, sentences, batch_size)  # (N, D)
    elif len(vectors) != len(sentences):
        raise ValueError(f"{len(vectors)} vectors given for the {len(sentences)} sentences of {where}")
    info: dict[str, Any] = {
        "method": settings.method,
        "fit_files": [str(f) for f in fit_files],
        "sentences": len(sentences),
        "pooler": encoder.pooler,
    }
    if settings.method == "pca":
        info.update(_attach_pca(encoder, vectors, settings, where))
    elif settings.method == "whitening":
        whitening = fit_whitening(vectors, settings.dim, where)
        encoder.dense.append(whitening.as_dense().to(encoder.device))
        info.update({"dim": whitening.weight.shape[1], "dense_index": len(encoder.dense) - 1})
    else:
        config = FlowConfig(vectors.shape[1], settings.levels, settings.depth, settings.width)
        flow = fit_flow(
            vectors,
            config,
            epochs=settings.epochs,
            steps=settings.steps,
            batch_size=settings.batch_size,
            learning_rate=settings.learning_rate,
            seed=settings.seed,
        )
        encoder.flow = flow.to(encoder.device)
        info.update(
            {k: getattr(settings, k) for k in ("epochs", "steps", "batch_size", "learning_rate", "seed")}
        )
    encoder.postprocess = info
    return encoder


def _attach_pca(
    encoder: Any, vectors: np.ndarray, settings: PostprocessSettings, where: str
) -> dict[str, Any]:
    """Append the PCA Dense layer (before the model's final normalisation); its fit record."""
    from sentcl.modeling.postprocess.pca import fit_pca

    assert settings.dim is not None
    pca = fit_pca(vectors, settings.dim, where, center=settings.center)
    encoder.dense.append(pca.as_dense().to(encoder.device))
    kept = float(pca.explained_variance_ratio.sum())
    logger.info("%s: PCA to %d dimensions keeps %.2f%% of the variance", where, settings.dim, 100 * kept)
    return {
        "dim": settings.dim,
        "center": settings.center,
        "explained_variance_ratio": round(kept, 6),
        "dense_index": len(encoder.dense) - 1,
    }
