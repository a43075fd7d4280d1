"""The three walks of bench/results/records/architecture-walks.md measured: which files of ``src/sentcl`` a reader passes through, in
the order the code runs, and how many times the walk returns to a file it has already left.

- ``train``: ``sentcl train --config RECIPE`` (4 steps of unsupervised SimCSE on a tiny random BERT, STS-B dev
  every 2 steps) from the command line to ``best/`` and its final evaluation;
- ``eval``: ``sentcl eval --model best/ --tasks stsb_dev`` on the trained model;
- ``embeddings``: one ``POST /v1/embeddings`` request to a service already started (the app is built, and
  its lifespan entered, before the walk begins).

How a walk is recorded: ``sys.setprofile`` (and ``threading.setprofile`` for the service's threads) sees every
Python call; the first call of each function whose code lives under ``src/sentcl`` appends that function's
file; module bodies, and what they call while a module is imported (registrations, decorators), are left
out. A function called again (each training step, each batch) adds
nothing, so a walk is the order in which a reader meets the code, not a count of iterations. Consecutive
repeats collapse to one entry; a *return* is an entry whose file appears earlier in the walk.

Run from the checkout's root (tiny models and data are built in a temporary folder; nothing else is
written)::

    PYTHONPATH=src python scripts/walks.py            # the three counts
    PYTHONPATH=src python scripts/walks.py --files    # and each walk file by file
    PYTHONPATH=src python scripts/walks.py --markdown --before OLD.json   # the record's section

``--src DIR`` measures another checkout's ``src`` (e.g. an older commit unpacked with ``git archive``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


class Walk:
    """The files of src/sentcl in the order their functions are first called."""

    def __init__(self, package: Path) -> None:
        self.package = str(package) + os.sep
        self.seen: set[Any] = set()
        self.files: list[str] = []
        self.lock = threading.Lock()

    def profile(self, frame: FrameType, event: str, _: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code in self.seen or code.co_name == "<module>" or not code.co_filename.startswith(self.package):
            return
        if importing(
            frame, self.package
        ):  # registrations and decorators run by an import: not the walk's data flow
            return
        with self.lock:
            self.seen.add(code)
            name = code.co_filename[len(self.package) :]
            if not self.files or self.files[-1] != name:
                self.files.append(name)

    def returns(self) -> int:
        """Entries whose file the walk had already left once."""
        return sum(1 for i, name in enumerate(self.files) if name in self.files[:i])

    def revisited(self) -> dict[str, int]:
        """File -> the times the walk came back to it, most first."""
        counts: dict[str, int] = {}
        for i, name in enumerate(self.files):
            if name in self.files[:i]:
                counts[name] = counts.get(name, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def importing(frame: FrameType | None, package: str) -> bool:
    """Whether a module body of ``package`` is running up the stack (the call happens while it is imported)."""
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_code.co_filename.startswith(package):
            return True
        frame = frame.f_back
    return False


@contextmanager
def walking(walk: Walk) -> Iterator[None]:
    threading.setprofile(walk.profile)
    sys.setprofile(walk.profile)
    try:
        yield
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def measure(package: Path, run: Callable[[], Any]) -> Walk:
    walk = Walk(package)
    with walking(walk):
        run()
    return walk


def measure_all(tmp: Path) -> dict[str, Walk]:
    """The three walks on a tiny model, a 40-line corpus and a small STS-B folder built in ``tmp``."""
    import yaml
    from helpers.data import tiny_recipe, write_corpus, write_small_sts
    from helpers.tiny_bert import build_tiny_bert

    import sentcl
    from sentcl.cli import main

    package = Path(sentcl.__file__).parent
    model = build_tiny_bert(tmp / "tiny_bert")
    data_dir = write_small_sts(tmp / "data")
    corpus = write_corpus(tmp / "corpus.txt", 40)
    recipe = tmp / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(tiny_recipe(model, data_dir, corpus, tmp / "run")), encoding="utf-8")
    walks = {}

    def train() -> None:
        assert main(["train", "--config", str(recipe)]) == 0

    walks["train"] = measure(package, train)

    def evaluate() -> None:
        args = ["eval", "--model", str(tmp / "run" / "best"), "--data-dir", str(data_dir)]
        assert main([*args, "--tasks", "stsb_dev", "--output", str(tmp / "eval.json")]) == 0

    walks["eval"] = measure(package, evaluate)
    walks["embeddings"] = _embeddings_walk(package, tmp / "run" / "best")
    return walks


def _embeddings_walk(package: Path, model: Path) -> Walk:
    from fastapi.testclient import TestClient

    from sentcl.modeling.open import open_model
    from sentcl.serve.app import create_app

    app = create_app(open_model(str(model)), model_name="tiny")
    walk = Walk(package)
    threading.setprofile(walk.profile)  # the service's threads (started by the client) see the walk too
    try:
        with TestClient(app, base_url="http://localhost") as client:
            client.get("/health")  # the lifespan and the first answer happen before the walk
            walk.seen.clear(), walk.files.clear()
            with walking(walk):
                answer = client.post("/v1/embeddings", json={"input": ["a man plays the guitar"]})
            assert answer.status_code == 200, answer.text
    finally:
        threading.setprofile(None)  # type: ignore[arg-type]
    return walk


TITLES = {
    "train": "A training run, `sentcl train --config RECIPE` to `best/` and its final evaluation",
    "eval": "An evaluation, `sentcl eval --model best/ --tasks stsb_dev`",
    "embeddings": "One `POST /v1/embeddings` request to a running service",
}


def markdown(report: dict[str, Any], before: dict[str, Any] | None) -> str:
    """Each walk as its files in the order first met, each with the times the walk came back to it (+n)."""
    out = []
    for name, walk in report.items():
        was = f" (before: {before[name]['returns']})" if before and name in before else ""
        files = list(dict.fromkeys(walk["files"]))
        out.append(
            f"**{TITLES[name]}**: {len(walk['files'])} entries over {len(files)} files, "
            f"{walk['returns']} returns{was}.\n"
        )
        steps = [f"`{f}`" + (f" (+{walk['revisited'][f]})" if f in walk["revisited"] else "") for f in files]
        out.append(" → ".join(steps) + "\n")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--files", action="store_true", help="Print each walk file by file.")
    parser.add_argument("--json", type=Path, help="Also write the walks and counts to this JSON file.")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="The src folder to measure.")
    parser.add_argument(
        "--markdown",
        action="store_true",
        help="Print the walks as bench/results/records/architecture-walks.md has them.",
    )
    parser.add_argument(
        "--before", type=Path, help="A --json file of an earlier measurement, for the before counts."
    )
    args = parser.parse_args(argv)
    sys.path[:0] = [str(args.src.resolve()), str(ROOT / "tests")]
    with tempfile.TemporaryDirectory() as tmp:
        walks = measure_all(Path(tmp))
    report = {}
    for name, walk in walks.items():
        report[name] = {"files": walk.files, "returns": walk.returns(), "revisited": walk.revisited()}
        if not args.markdown:
            print(
                f"{name}: {len(walk.files)} entries, {len(set(walk.files))} files, {walk.returns()} returns"
            )
        if args.files:
            for i, file in enumerate(walk.files):
                print(f"  {i + 1:3d} {file}{'  (again)' if file in walk.files[:i] else ''}")
    if args.markdown:
        before = json.loads(args.before.read_text(encoding="utf-8")) if args.before else None
        print(markdown(report, before))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
