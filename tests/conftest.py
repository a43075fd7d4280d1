"""Shared fixtures: a tiny random BERT built from a config (no download), the data folder, the service's
encoder and index. Shared helper functions live in tests/helpers/."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pytest
from helpers.data import SERVE_CORPUS, write_corpus
from helpers.tiny_bert import build_tiny_bert
from hypothesis import settings as hypothesis_settings

from sentcl.files.paths import resolve_data_dir

# onnxruntime.transformers appends its own folder to sys.path when first imported (its modules import each other
# by bare name, ``from fusion_options import ...``). Imported here, before any test's monkeypatch.syspath_prepend
# saves sys.path: a test that imported it first would otherwise take the entry away at teardown, and every later
# ONNX export (sentcl.interop.onnx.fuse_graph) would fail with "No module named 'fusion_options'".
with contextlib.suppress(ImportError):
    import onnxruntime.transformers  # noqa: F401

# Generated cases are judged by their outcome, not by wall time: a per-example deadline fails a correct test
# whenever the shared machine is busy. Hangs are bounded by each test's own timeouts instead.
hypothesis_settings.register_profile("sentcl", deadline=None)
hypothesis_settings.load_profile("sentcl")


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real data folder ($SENTCL_DATA, which make test sets, else ../shared/data beside the
    checkout): always present in development and CI."""
    return resolve_data_dir(
        os.environ.get("SENTCL_DATA") or Path(__file__).resolve().parents[1].parent / "shared" / "data"
    )


@pytest.fixture()
def corpus_file(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus.txt", 40)


# ---- the service's tests (tests/serve/): the tiny encoder and an index saved by ``sentcl search --index``
# (here, beside the other fixtures, so that one conftest holds them all)


@pytest.fixture(scope="session")
def tiny_encoder(tiny_bert: Path) -> Any:
    from sentcl.modeling.open import load_encoder

    return load_encoder(str(tiny_bert), pooler="avg")


@pytest.fixture(scope="session")
def index_dir(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index folder built the way ``sentcl search --index DIR`` builds it (same pooler as tiny_encoder)."""
    from sentcl.index.search import run_search

    folder = tmp_path_factory.mktemp("serve_index")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(SERVE_CORPUS) + "\n", encoding="utf-8")
    run_search(str(tiny_bert), corpus, ["a dog"], k=1, index_dir=folder / "index", pooler="avg")
    return folder / "index"
