"""Which layers a student of all-MiniLM-L6-v2 keeps: each candidate subset, cut and untrained, on STS-B dev.

The candidates are the 6 -> 3 choices that keep the teacher's last layer (layer 5), the 6 -> 2 ones, and the
distillation grid's [0, 2, 4]. Each is the teacher's layers cut as ``model.student_layers`` cuts them
(``sentcl.modeling.student.keep_layers``), scored on STS-B dev (Spearman x 100, ``sentcl.evaluation.sts``), one
thread. A rough guide to what training starts from, read before a long run; the trained student is scored on
the seven STS tasks.

    python -m bench.layer_choice --output bench/results/layer_choice.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import torch

from sentcl.evaluation.sts import evaluate_sts_dev
from sentcl.files.paths import resolve_data_dir
from sentcl.modeling.open import open_model
from sentcl.modeling.student import keep_layers

TEACHER = "all-MiniLM-L6-v2"
CANDIDATES = (
    [[*pair, 5] for pair in itertools.combinations(range(5), 2)] + [[i, 5] for i in range(5)] + [[0, 2, 4]]
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = resolve_data_dir(args.data_dir)
    rows = []
    for layers in CANDIDATES:
        encoder = open_model(TEACHER)
        keep_layers(encoder.backbone, layers, TEACHER)
        start = time.perf_counter()
        result = evaluate_sts_dev(
            lambda s, e=encoder: e.encode(s, batch_size=128), data, tasks=("STSBenchmark",)
        )
        rows.append({"layers": layers, "stsb_dev": result["avg"], "seconds": time.perf_counter() - start})
        print(json.dumps(rows[-1]), flush=True)
    if args.output:
        args.output.write_text(
            json.dumps({"teacher": TEACHER, "rows": rows}, indent=2) + "\n", encoding="utf-8"
        )


if __name__ == "__main__":
    main()
