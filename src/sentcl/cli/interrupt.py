"""Ctrl-C always stops a command, in one line.

Python turns SIGINT into ``KeyboardInterrupt`` in whatever frame runs when the signal arrives. Raised inside a
finaliser (``__del__``) or a callback whose exceptions are not propagated, it is printed as "Exception ignored
... KeyboardInterrupt" and lost, and the command runs on as if nobody had pressed the key. So the handler here
raises ``KeyboardInterrupt`` and arms a timer that raises it again every ``RETRY_S`` seconds until ``main``
catches one and disarms it; and an interrupt lost in a finaliser prints nothing (``sys.unraisablehook``).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

RETRY_S = 0.2  # seconds before an interrupt that was swallowed is raised again


def _interrupt(signum: int, frame: FrameType | None) -> None:
    signal.setitimer(signal.ITIMER_REAL, RETRY_S)
    raise KeyboardInterrupt


def _unraisable(info: Any, default: Any = sys.unraisablehook) -> None:
    if isinstance(info.exc_value, KeyboardInterrupt):
        return  # lost in a finaliser: the timer raises it again where it propagates
    default(info)


def install() -> Callable[[], None]:
    """Ctrl-C as above, for the process's main thread (elsewhere Python delivers no signals); returns what puts
    the previous handlers back (a caller in process, such as a test, keeps its own)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGALRM), sys.unraisablehook
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGALRM, _interrupt)
    sys.unraisablehook = _unraisable

    def restore() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGALRM, before[1])
        sys.unraisablehook = before[2]

    return restore


def disarm() -> None:
    """The interrupt was caught: no timer raises it again."""
    if threading.current_thread() is threading.main_thread():
        signal.setitimer(signal.ITIMER_REAL, 0)
