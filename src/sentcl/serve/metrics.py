"""Counters and histograms in Prometheus' text exposition format (version 0.0.4), without a dependency.

``sentcl_requests_total{route,status}``, ``sentcl_errors_total{route,error_type}``,
``sentcl_request_seconds{route}`` (histogram), ``sentcl_batch_sentences`` and ``sentcl_encode_seconds``
(histograms, one observation per encode call) and ``sentcl_queue_sentences`` (gauge: sentences waiting).
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
ERROR_TYPE_HEADER = "x-error-type"  # set on every JSON error, so that errors are counted by type
Labels = tuple[tuple[str, str], ...]


def _labels(labels: Labels, extra: tuple[str, str] | None = None) -> str:
    pairs = [*labels, extra] if extra else list(labels)
    if not pairs:
        return ""
    escaped = (v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") for _, v in pairs)
    return "{" + ",".join(f'{k}="{v}"' for (k, _), v in zip(pairs, escaped, strict=True)) + "}"


class Counter:
    def __init__(self, name: str, help_: str) -> None:
        self.name, self.help = name, help_
        self.values: dict[Labels, float] = {}
        self._lock = threading.Lock()

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            self.values[key] = self.values.get(key, 0.0) + amount

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} counter"]
        with self._lock:
            lines += [f"{self.name}{_labels(k)} {v:g}" for k, v in sorted(self.values.items())]
        return lines


class Histogram:
    def __init__(self, name: str, help_: str, buckets: tuple[float, ...]) -> None:
        self.name, self.help, self.buckets = name, help_, buckets
        self.series: dict[Labels, tuple[list[int], list[float]]] = {}  # counts per bucket (+Inf last), [sum]
        self._lock = threading.Lock()

    def observe(self, value: float, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            counts, total = self.series.setdefault(key, ([0] * (len(self.buckets) + 1), [0.0]))
            counts[bisect.bisect_left(self.buckets, value)] += 1  # first bucket with value <= le
            total[0] += value

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        with self._lock:
            for key, (counts, total) in sorted(self.series.items()):
                running = 0
                for le, count in zip([*map(str, self.buckets), "+Inf"], counts, strict=True):
                    running += count
                    lines.append(f"{self.name}_bucket{_labels(key, ('le', le))} {running}")
                lines.append(f"{self.name}_sum{_labels(key)} {total[0]:g}")
                lines.append(f"{self.name}_count{_labels(key)} {running}")
        return lines


class Metrics:
    """The service's metrics; ``queue_depth`` is read when rendering."""

    def __init__(self, queue_depth: Callable[[], int] = lambda: 0) -> None:
        self.queue_depth = queue_depth
        self.requests = Counter("sentcl_requests_total", "HTTP requests by route and status.")
        self.errors = Counter("sentcl_errors_total", "Refused or failed requests by route and error type.")
        self.latency = Histogram("sentcl_request_seconds", "Request latency in seconds.", LATENCY_BUCKETS)
        self.batch = Histogram("sentcl_batch_sentences", "Sentences per encode call.", BATCH_BUCKETS)
        self.encode = Histogram("sentcl_encode_seconds", "Seconds per encode call.", LATENCY_BUCKETS)

    def render(self) -> str:
        lines: list[str] = []
        for metric in (self.requests, self.errors, self.latency, self.batch, self.encode):
            lines += metric.render()
        lines += [
            "# HELP sentcl_queue_sentences Sentences waiting to be encoded.",
            "# TYPE sentcl_queue_sentences gauge",
            f"sentcl_queue_sentences {self.queue_depth()}",
        ]
        return "\n".join(lines) + "\n"


class MetricsMiddleware:
    """ASGI middleware: counts every HTTP request by route template (``other`` for unknown paths) and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics, routes: frozenset[str]) -> None:
        self.app = app
        self.metrics = metrics
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status, error_type = [500], ["internal"]

        async def record(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
                headers = dict(message.get("headers", []))
                error_type[0] = headers.get(ERROR_TYPE_HEADER.encode(), b"http_error").decode()
            await send(message)

        try:
            await self.app(scope, receive, record)
        finally:
            route = scope["path"] if scope["path"] in self.routes else "other"
            self.metrics.requests.inc(route=route, status=str(status[0]))
            self.metrics.latency.observe(time.perf_counter() - start, route=route)
            if status[0] >= 400:
                self.metrics.errors.inc(route=route, error_type=error_type[0])
