"""The static points' speed on a realistic load: thousands of distinct real sentences, each library as it is called.

``bench.frontier`` times every point on its first 500 distinct STS-B test sentences, encoded again and again in
calls of 128 until a second has passed. That suits the transformer points (a pass takes seconds) but not a
static model, whose pass takes milliseconds: there the load is mostly call overhead. Here every point encodes the
same ``--sentences`` distinct sentences of the offline English corpus (``sentcl.methods.static_student``'s
corpus; 10,000 by default) in one call per pass, one thread, in alternating rounds (``sentcl.evaluation.speed``:
rotating who goes first; the figures are medians over rounds, and the speed ratios are taken within a round).

Each point is called two ways where the library has a choice that matters: its defaults, and the best setting
its documentation offers for one process (the batch size). The points and exactly how each is called:

- ``teacher``: sentcl's PyTorch encode of the teacher, ``SentenceEncoder.encode(sentences)`` (defaults: batch
  128, the model's max length);
- ``st``: sentence-transformers' ``SentenceTransformer(teacher).encode(sentences)`` (defaults: batch 32), run by
  ``--peer-python`` (``bench/st_peer.py``);
- ``NAME`` for each ``--static NAME=FOLDER``: sentcl's static encode, ``open_model(FOLDER).encode(sentences)``
  (defaults: batch 128), and ``NAME@all`` with ``batch_size=len(sentences)``;
- ``NAME`` for each ``--model2vec NAME=FOLDER`` (a Model2Vec folder: its ``distill``, or tokenlearn's model):
  Model2Vec's ``StaticModel.from_pretrained(FOLDER).encode(sentences, use_multiprocessing=False)`` (defaults:
  batch 1024, max length 512; its thread pool only starts above 10,000 sentences, and this is a one-thread
  comparison), and ``NAME@all`` with ``batch_size=len(sentences)``; ``--encoded-by NAME=PYTHON`` runs that
  point's worker under another interpreter (another Model2Vec version's ``encode`` of the same folder).

The ratios are given against both references: sentcl's PyTorch encode of the teacher (the frontier page's 1x)
and sentence-transformers' (``st``). Every peer's package versions are recorded as its worker reports them, and
each static point's seven-task STS average is measured by sentcl's evaluation path (the teacher's and ``st``'s
are the committed teacher figure: the same weights).

    python -m bench.static_speed --peer-python .venv-peer/bin/python --static static-256=DIR \\
        --model2vec model2vec=DIR --model2vec tokenlearn=DIR --output bench/results/static_speed.json
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from bench import harness
from bench.common import format_table, set_threads
from bench.distill_speed import folder_size
from bench.frontier_points import reference_sts
from bench.st_peer import PeerEncoder
from sentcl.evaluation.speed import EncodeTimed, alternate_rounds, speed_rows, timed
from sentcl.files.paths import resolve_data_dir, resolve_model_path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = harness.parser(__doc__, "static_speed", corpus=False, batch_size=None, threads=1, worker=None)
    p.add_argument("--teacher", default=harness.DEFAULT_MODEL)
    p.add_argument(
        "--static", action="append", default=[], metavar="NAME=FOLDER", help="a sentcl static model"
    )
    p.add_argument(
        "--model2vec", action="append", default=[], metavar="NAME=FOLDER", help="a Model2Vec folder"
    )
    p.add_argument("--peer-python", required=True, help="interpreter of the peers (make bench-peer-venv)")
    p.add_argument(
        "--encoded-by",
        action="append",
        default=[],
        metavar="NAME=PYTHON",
        help="a --model2vec point's worker runs under this interpreter (another Model2Vec version's encode)",
    )
    p.add_argument("--sentences", type=int, default=10_000, help="the first N distinct corpus sentences")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--min-seconds", type=float, default=2.0, help="each timing repeats until this long")
    args = p.parse_args(argv)
    args.argv = argv
    return args


def named(specs: list[str], option: str) -> dict[str, Path]:
    """``NAME=FOLDER`` specs of ``option``: each folder must exist."""
    found: dict[str, Path] = {}
    for spec in specs:
        name, _, folder = spec.partition("=")
        if not name or not Path(folder).is_dir():
            raise ValueError(f"{option} {spec!r}: NAME=FOLDER with an existing folder")
        found[name] = Path(folder)
    return found


def corpus_sentences_of(folder: Path) -> int | None:
    """How many corpus sentences a static folder's model was fitted to: a sentcl static folder's summary
    (``SUMMARY_FILE``), or the record ``bench/static_peers.py`` leaves in a peer's folder (None: no corpus, or
    not recorded)."""
    import json

    from bench.static_peers import FITTED_ON
    from sentcl.methods.static_student import SUMMARY_FILE, read_summary

    if (folder / SUMMARY_FILE).is_file():
        return read_summary(folder).get("corpus_sentences")
    if (folder / FITTED_ON).is_file():
        return json.loads((folder / FITTED_ON).read_text(encoding="utf-8")).get("corpus_sentences")
    return None


def peer_timed(peer: PeerEncoder) -> EncodeTimed:
    """The worker's own time of each call (the pipe's transfer left out)."""

    def run(sentences: list[str]) -> tuple[float, float, np.ndarray]:
        out = peer(sentences)
        return peer.last_seconds, peer.last_cpu_seconds, out

    return run


@contextmanager
def build_points(
    args: argparse.Namespace, n: int
) -> Iterator[tuple[dict[str, EncodeTimed], dict[str, dict[str, Any]], dict[str, Any]]]:
    """The timed points, each point's description (how it is called, its folder), and each static point's
    encode for the STS evaluation; the peers' workers are closed at exit."""
    from sentcl.modeling.encoder import SentenceEncoder
    from sentcl.modeling.open import open_model

    teacher_dir = Path(resolve_model_path(args.teacher))
    teacher = SentenceEncoder.from_pretrained(str(teacher_dir)).eval()
    points: dict[str, EncodeTimed] = {"teacher": timed(teacher.encode)}
    about = {
        "teacher": {"family": "sentcl", "called": "SentenceEncoder.encode(sentences)", "folder": teacher_dir}
    }
    scorers: dict[str, Any] = {}
    with ExitStack() as stack:
        pythons = dict(spec.partition("=")[::2] for spec in args.encoded_by)

        def peer(folder: Path, backend: str, batch: int, python: str | None = None) -> PeerEncoder:
            worker = PeerEncoder(python or args.peer_python, str(folder), backend, batch, 0, args.threads)
            stack.callback(worker.close)
            return worker

        st = peer(teacher_dir, "torch", 0)
        points["st"] = peer_timed(st)
        about["st"] = {"family": "peer", "called": "SentenceTransformer(teacher).encode(sentences)"}
        about["st"] |= {"folder": teacher_dir, "versions": st.versions}
        for name, folder in named(args.static, "--static").items():
            model = open_model(str(folder), threads=args.threads)
            points[name] = timed(model.encode)
            points[f"{name}@all"] = timed(lambda s, m=model: m.encode(s, batch_size=len(s)))
            about[name] = {"family": "sentcl", "called": "open_model(FOLDER).encode(sentences)"}
            about[f"{name}@all"] = {"family": "sentcl", "called": f"encode(sentences, batch_size={n})"}
            for key in (name, f"{name}@all"):
                about[key] |= {"folder": folder, "corpus_sentences": corpus_sentences_of(folder)}
            scorers[name] = model.encode
        for name, folder in named(args.model2vec, "--model2vec").items():
            python = pythons.get(name)
            default, whole = peer(folder, "model2vec", 0, python), peer(folder, "model2vec", n, python)
            points[name], points[f"{name}@all"] = peer_timed(default), peer_timed(whole)
            call = "StaticModel.from_pretrained(FOLDER).encode(sentences, use_multiprocessing=False"
            about[name] = {"family": "peer", "called": call + ")"}
            about[f"{name}@all"] = {"family": "peer", "called": call + f", batch_size={n})"}
            for key in (name, f"{name}@all"):
                about[key] |= {"folder": folder, "versions": default.versions}
                about[key]["corpus_sentences"] = corpus_sentences_of(folder)
            scorers[name] = default
        yield points, about, scorers


def run(args: argparse.Namespace) -> dict[str, Any]:
    from sentcl.evaluation.runner import evaluate, headline
    from sentcl.methods.static_student import corpus_sentences

    set_threads(args.threads)
    head = harness.header("static_speed", args, args.threads, skip=("argv",), argv=args.argv)
    head["started"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    data_dir = resolve_data_dir(args.data_dir)
    sentences = corpus_sentences(data_dir, args.sentences)
    with build_points(args, len(sentences)) as (points, about, scorers):
        rates, cpu, _ = alternate_rounds(points, sentences, args.rounds, args.min_seconds)
        committed = reference_sts() if args.teacher == harness.DEFAULT_MODEL else {}
        teacher_sts = committed.get("teacher", {"avg": None, "source": "no committed figure"})
        sts = {name: teacher_sts for name in ("teacher", "st")}
        for name, encode in scorers.items():
            scores = evaluate(encode, data_dir, ["sts"], progress=False)["sts"]
            sts[name] = {"avg": headline("sts", scores), "source": "measured in this run"}
    vs_teacher, vs_st = speed_rows(rates, cpu, "teacher"), speed_rows(rates, cpu, "st")
    rows: dict[str, Any] = {}
    for name, row in vs_teacher.items():
        desc = {k: str(v) if isinstance(v, Path) else v for k, v in about[name].items()}
        base = name.split("@")[0]
        rows[name] = {**desc, **row, "speed_vs_st": vs_st[name]["speed_vs_teacher"]}
        rows[name] |= {"sts": sts.get(base), "size": folder_size(about[name]["folder"])}
    words = [len(s.split()) for s in sentences]
    load = {"sentences": len(sentences), "distinct": len(set(sentences)), "mean_words": float(np.mean(words))}
    return {**head, "load": load, "points": rows}


def report(res: dict[str, Any]) -> str:
    rows = [
        [
            name,
            row["sentences_per_s"],
            row["speed_vs_teacher"],
            row["speed_vs_st"],
            "-" if not row["sts"] or row["sts"]["avg"] is None else row["sts"]["avg"],
        ]
        for name, row in res["points"].items()
    ]
    headers = ["point", "sentences/s", "x teacher (sentcl)", "x st", "STS avg"]
    return format_table(headers, rows) + f"\n{res['load']['sentences']} distinct sentences, 1 thread each"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return harness.main(argv, parse_args, run, report)


if __name__ == "__main__":
    main()
