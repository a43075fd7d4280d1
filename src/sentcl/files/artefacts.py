"""The shapes of the run-folder files that more than one command reads back (``sentcl report``, ``sentcl
experiment`` and its ``--from-summaries``), as ``sentcl.files.fields`` specs for ``read_typed_json``.

- ``results.json``: ``results`` maps each task to its result object; the best step and score, the dev task and
  the last step (the score may be null: strict JSON's NaN);
- ``config.json``: the resolved recipe, each present section an object (``training.output_dir`` text);
- ``report_cache.json``: the model fingerprint it was computed for and task results as in ``results.json``;
- a ``metrics.jsonl`` record with an alignment: its step and the two numbers (``alignment``, ``uniformity``).
"""

from __future__ import annotations

from sentcl.files.fields import Anything, Int, Maybe, Real, Record, Seq, Table, Text

TASK_RESULTS = Table(Table(Anything()))  # task -> its result object (each task's own fields)

RUN_RESULTS = Record(
    {"results": TASK_RESULTS},
    {
        "best_step": Maybe(Int(0)),
        "best_dev_score": Maybe(Real()),
        "dev_task": Maybe(Text()),
        "global_step": Int(0),
        "warnings": Seq(Text()),
    },
)

RUN_CONFIG = Record(
    optional={
        "model": Record(),
        "data": Record(),
        "objective": Record(),
        "training": Record(optional={"output_dir": Maybe(Text())}),
        "eval": Record(),
    }
)

REPORT_CACHE = Record({"results": TASK_RESULTS}, {"model_fingerprint": Maybe(Text()), "model": Maybe(Text())})

ALIGNMENT_RECORD = Record({"step": Int(0), "alignment": Maybe(Real()), "uniformity": Maybe(Real())})
RESUME_RECORD = Record({"step": Int(0)})

#: ``start_results.json``: the start model as the run pools it (``eval.compare_with_start``), task -> result
START_RESULTS = TASK_RESULTS
#: ``start_own_pooling.json``: the start model in its own pooling, where the run pools it otherwise
START_OWN_POOLING = Record({"pooler": Text(), "results": TASK_RESULTS})
