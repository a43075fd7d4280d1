"""The start model beside a run's result: the two files a run folder keeps of its start model's evaluation
(``training/evaluation_hooks.py`` writes them) and the one rule that turns them into table columns, which
``sentcl train``'s table, ``sentcl report`` and the grid pages all use.

- ``start_results.json``: the start model as the run pools it (``eval.compare_with_start``);
- ``start_own_pooling.json``: the start model in its own pooling (a sentence encoder's folder), written where
  the run pools it otherwise: the table then shows whether training beat the model as its authors use it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sentcl.files.artefacts import START_OWN_POOLING, START_RESULTS
from sentcl.files.read import read_typed_json

START_RESULTS_FILE = "start_results.json"
START_OWN_POOLING_FILE = "start_own_pooling.json"
TRAINED = "trained"

Results = dict[str, Any]  # task -> its result object


def read_starts(folder: Path) -> tuple[Results | None, tuple[str, Results] | None]:
    """(the start model as the run pooled it, (its own pooler, its results)) from a run folder or a run's
    summary; None for a file the run did not write. A damaged file is an error naming it."""
    as_run = own = None
    if (folder / START_RESULTS_FILE).is_file():
        as_run = read_typed_json(folder / START_RESULTS_FILE, START_RESULTS, "the start model's results")
    if (folder / START_OWN_POOLING_FILE).is_file():
        saved = read_typed_json(
            folder / START_OWN_POOLING_FILE, START_OWN_POOLING, "the start model's results in its own pooling"
        )
        own = (saved["pooler"], saved["results"])
    return as_run, own


def result_columns(
    results: Results,
    pooler: str | None,
    start_results: Results | None = None,
    start_own: tuple[str, Results] | None = None,
) -> dict[str, Results]:
    """The columns of a training table, in order: the start model in its own pooling (where the run pooled it
    otherwise), the start model as the run pooled it (``pooler``: the run's ``model.pooler``), the trained
    model (``TRAINED``)."""
    columns: dict[str, Results] = {}
    if start_own is not None:
        own_pooler, own_results = start_own
        columns[f"start model, own pooling ({own_pooler})"] = own_results
        if start_results:
            columns[f"start model, {pooler}"] = start_results
    elif start_results:
        columns["start model"] = start_results
    return {**columns, TRAINED: results}
