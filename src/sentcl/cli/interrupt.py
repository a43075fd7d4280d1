"""Ctrl-C always stops a command, in one line.

Python turns SIGINT into ``KeyboardInterrupt`` in whatever frame runs when the signal arrives. Raised inside a
finaliser (``__del__``) or a callback whose exceptions are not propagated, it is printed as "Exception ignored
... KeyboardInterrupt" and lost, and the command runs on as if nobody had pressed the key. So the handler here
raises ``KeyboardInterrupt`` and starts a thread that interrupts the main thread again every ``RETRY_S``
seconds (``_thread.interrupt_main``: no timer signal, so a caller's own ``SIGALRM`` is left alone) until
``main`` catches one and disarms it; and an interrupt lost in a finaliser prints nothing
(``sys.unraisablehook``).
"""

from __future__ import annotations

import _thread
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

RETRY_S = 0.2  # seconds before an interrupt that was swallowed is raised again


class _State:
    def __init__(self) -> None:
        self.caught = threading.Event()  # main caught an interrupt: no more are raised
        self.retrying: threading.Thread | None = None

    def retry(self) -> None:
        while not self.caught.wait(RETRY_S):
            _thread.interrupt_main(signal.SIGINT)


_state = _State()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    if _state.caught.is_set():
        return  # main is already stopping the command
    if _state.retrying is None:
        _state.retrying = threading.Thread(target=_state.retry, name="sentcl-interrupt", daemon=True)
        _state.retrying.start()
    raise KeyboardInterrupt


def _unraisable(info: Any, default: Any = sys.unraisablehook) -> None:
    if isinstance(info.exc_value, KeyboardInterrupt):
        return  # lost in a finaliser: the retry raises it again where it propagates
    default(info)


def install() -> Callable[[], None]:
    """Ctrl-C as above, for the process's main thread (elsewhere Python delivers no signals); returns what puts
    the previous handlers back (a caller in process, such as a test, keeps its own)."""
    global _state
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    _state = _State()
    before = signal.getsignal(signal.SIGINT), sys.unraisablehook
    signal.signal(signal.SIGINT, _interrupt)
    sys.unraisablehook = _unraisable

    def restore() -> None:
        disarm()
        signal.signal(signal.SIGINT, before[0])
        sys.unraisablehook = before[1]

    return restore


def disarm() -> None:
    """The interrupt was caught (or the command ended): no retry raises it again."""
    _state.caught.set()
