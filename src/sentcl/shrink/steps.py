"""The resumable steps of a shrink run: each step's record, written atomically when the step has finished.

A step is a name, its inputs (every setting and upstream result it reads, as JSON) and a function that does
the work and returns its result (JSON). ``steps/NAME.json`` holds the digest of the inputs and the result,
written atomically (``sentcl.files.atomic``) after the step's files are in place, so a step killed mid-way
has no record and runs again on the next run; a finished step whose inputs are unchanged is reused without
running; a step whose inputs changed runs again. A step's own files are written whole (a model folder through
a temporary sibling), so a redone step never reads a half-written one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sentcl.files.atomic import atomic_write_json
from sentcl.files.fingerprint import json_digest
from sentcl.files.read import read_json

logger = logging.getLogger(__name__)
STEPS = "steps"


class Steps:
    """The step records of the run folder ``root`` (``root/steps/NAME.json``)."""

    def __init__(self, root: Path, log: Callable[[str], None] = print) -> None:
        self.folder = Path(root) / STEPS
        self.log = log
        self.reused: list[str] = []
        self.ran: list[str] = []

    def record_path(self, name: str) -> Path:
        return self.folder / f"{name}.json"

    def finished(self, name: str, inputs: Any) -> dict[str, Any] | None:
        """The step's result if it finished with these inputs, else None."""
        path = self.record_path(name)
        if not path.is_file():
            return None
        try:
            record = read_json(path)
        except (OSError, ValueError) as err:
            logger.warning("%s: unreadable step record (%s): the step runs again", path, err)
            return None
        if not isinstance(record, dict) or record.get("inputs") != json_digest(inputs):
            return None
        return record.get("result")

    def run(self, name: str, inputs: Any, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The step's result: reused when it finished with these inputs, else ``work()`` then recorded."""
        done = self.finished(name, inputs)
        if done is not None:
            self.reused.append(name)
            self.log(f"{name}: done before, reused")
            return done
        self.log(f"{name}: running")
        wall, cpu = time.perf_counter(), time.process_time()
        result = work()
        result = {
            **result,
            "wall_seconds": round(time.perf_counter() - wall, 2),
            "cpu_seconds": round(time.process_time() - cpu, 2),
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(
            self.record_path(name), {"step": name, "inputs": json_digest(inputs), "result": result}
        )
        self.ran.append(name)
        self.log(f"{name}: done in {result['wall_seconds']:.1f} s")
        return result


__all__ = ["STEPS", "Steps"]
