"""uvicorn's h11 protocol with the limits it lacks against slow and idle clients.

uvicorn (0.54, with h11) has a keep-alive timeout that starts only after a response, and no limit on the time
a client takes to send a request: a client that trickles header bytes, or opens a connection and sends
nothing, is held for ever (an fd and a slot each). ``guarded_protocol`` adds, per connection:

- a *header* deadline: the request line and headers must arrive within ``header_timeout`` seconds of the
  connection's opening (for a kept-alive connection's next request: of that request's first byte). A client
  that misses it is answered 408 and disconnected;
- a *body* deadline: once the headers are in, the body must arrive within ``body_timeout`` seconds (the
  connection is closed, the route sees the client gone);
- a cap of ``max_connections`` open connections: one over it is answered 503 and closed at once.

Between requests, uvicorn's own ``timeout_keep_alive`` closes an idle kept-alive connection, after
``serve.server.KEEP_ALIVE_S`` by default: longer than the idle expiry of the clients' connection pools (httpx 5 s, Node's
agent 5 s, aiohttp 15 s), so that the client closes an idle connection first. A server that closes first races
the client's next request on that connection: the request meets the close, and the client gets no answer at
all (1 request of 4,500 in a flood of one-sentence requests from httpx against a 5 s timeout); a POST is not
retried by clients. Behind a load balancer, set ``--keep-alive-timeout`` above the balancer's idle timeout.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


def _raw_error(status: int, reason: str, error_type: str, message: str) -> bytes:
    body = json.dumps({"error": message, "error_type": error_type}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        f"x-error-type: {error_type}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


class GuardedH11Protocol(H11Protocol):
    """See the module's docstring; the limits are class attributes set by ``guarded_protocol``."""

    header_timeout: float  # the defaults are sentcl serve's options'
    body_timeout: float
    max_connections: int

    def connection_made(self, transport: asyncio.BaseTransport) -> None:  # type: ignore[override]
        self._deadline: asyncio.TimerHandle | None = None
        self._phase = ""
        super().connection_made(transport)  # type: ignore[arg-type]
        if len(self.connections) > self.max_connections:
            message = f"over {self.max_connections} open connections; retry"
            self.transport.write(_raw_error(503, "Service Unavailable", "overloaded", message))
            self.transport.close()
            return
        self._arm("headers", self.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE and self._phase != "headers":
            self._arm("headers", self.header_timeout)  # the first byte of a kept-alive connection's request
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        state = self.conn.their_state
        if state is h11.SEND_BODY and self._phase != "body":
            self._arm("body", self.body_timeout)
        elif state not in (h11.IDLE, h11.SEND_BODY):
            self._disarm()  # the request is in: the route's time is not the client's

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.conn.their_state is not h11.IDLE:
            return
        self._disarm()  # between requests uvicorn's keep-alive timeout applies

    def _arm(self, phase: str, seconds: float) -> None:
        self._disarm()
        self._phase = phase
        self._deadline = self.loop.call_later(seconds, self._expired, phase)

    def _disarm(self) -> None:
        if getattr(self, "_deadline", None) is not None:
            self._deadline.cancel()  # type: ignore[union-attr]
        self._deadline, self._phase = None, ""

    def _expired(self, phase: str) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if phase == "headers":
            seconds = self.header_timeout
            message = f"the request's headers did not arrive within {seconds:g} s"
            self.transport.write(_raw_error(408, "Request Timeout", "request_timeout", message))
        self.logger.info("closed a connection whose request %s took over the limit", phase)
        self.transport.close()


def guarded_protocol(header_timeout: float, body_timeout: float, max_connections: int) -> type[Any]:
    """An h11 protocol class for ``uvicorn.Config(http=...)`` with these limits."""
    for name, value in (("--header-timeout", header_timeout), ("--body-timeout", body_timeout)):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a number of seconds > 0, got {value}")
    if max_connections < 1:
        raise ValueError(f"--max-connections must be >= 1, got {max_connections}")
    attrs = {
        "header_timeout": header_timeout,
        "body_timeout": body_timeout,
        "max_connections": max_connections,
    }
    return type("SentclH11Protocol", (GuardedH11Protocol,), attrs)
