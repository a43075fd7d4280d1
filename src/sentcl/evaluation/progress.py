"""Progress of a long evaluation: parts done out of the total, on stderr.

On a terminal a tqdm bar; otherwise (a log file, a pipe, CI) one line per part done, e.g.
``eval: 3/14 done: STS14 (41.2 s)``, so a long run never sits silent. A part is one STS task, one transfer
task, or a whole task that has no parts of its own (alignment/uniformity, anisotropy, mteb).
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any


class Progress:
    """Counts parts done out of ``total``; ``done(name)`` after each. ``close()`` ends the bar."""

    def __init__(self, total: int, desc: str = "eval", stream: IO[str] | None = None) -> None:
        self.total, self.desc, self.count = total, desc, 0
        self.stream = stream if stream is not None else sys.stderr
        self.last = time.perf_counter()
        self.bar: Any = None
        if total > 0 and getattr(self.stream, "isatty", lambda: False)():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=desc, unit="task", file=self.stream)

    def done(self, name: str) -> None:
        now = time.perf_counter()
        self.count += 1
        if self.bar is not None:
            self.bar.set_postfix_str(name, refresh=False)
            self.bar.update(1)
        else:
            print(
                f"{self.desc}: {self.count}/{self.total} done: {name} ({now - self.last:.1f} s)",
                file=self.stream,
                flush=True,
            )
        self.last = now

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
