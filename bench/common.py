"""Shared benchmark helpers: machine facts, matmul peak, resident memory, FLOP counts, tables and JSON."""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from sentcl.training.allocator import resident_bytes
from sentcl.training.provenance import cpu_flags as provenance_flags
from sentcl.training.provenance import cpu_model

FLAGS_SHOWN = ("avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_int8", "avx512_vnni", "avx_vnni")

# malloc settings for the memory workers: glibc's default, or a fixed mmap threshold so that large tensors
# are mmapped and returned to the system when freed (RSS then follows the memory in use)
# "mallopt": glibc's default environment; the worker calls sentcl.training.allocator.fix_mmap_threshold()
# at start, as the training loop does with training.gradient_cache_chunk
ALLOCATORS: dict[str, dict[str, str]] = {
    "glibc": {},
    "mmap128k": {"MALLOC_MMAP_THRESHOLD_": "131072"},
    "mallopt": {"SENTCL_BENCH_MALLOPT": "1"},
}


def worker_env(root: Path, allocator: str = "glibc") -> dict[str, str]:
    """The environment of a fresh worker process: the repository on PYTHONPATH and the malloc setting."""
    if allocator not in ALLOCATORS:
        raise ValueError(f"unknown allocator setting {allocator!r}; valid: {', '.join(ALLOCATORS)}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "SENTCL_BENCH_MALLOPT"))}
    env["PYTHONPATH"] = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    return {**env, **ALLOCATORS[allocator]}


def rss_mb(pid: int | None = None) -> float:
    """Current resident set size in MiB: of this process (``training.allocator.resident_bytes``, from
    /proc/self/statm), or of process ``pid`` (VmRSS of /proc/PID/status); raises where it cannot be read."""
    if pid is not None:
        try:
            with open(f"/proc/{pid}/status", encoding="ascii") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024  # kB
        except OSError as err:
            raise RuntimeError(f"no resident set size for process {pid}: {err}") from err
        raise RuntimeError(f"no resident set size for process {pid}: /proc/{pid}/status has no VmRSS")
    resident = resident_bytes()
    if not resident:
        raise RuntimeError("no resident set size: /proc/self/statm cannot be read")
    return resident / 2**20


def max_rss_mb() -> float:
    """Peak resident set size of this process so far in MiB: VmHWM of /proc/self/status.

    Not ``ru_maxrss``: Linux carries the parent's peak over fork + exec into it, so a worker started
    from a big benchmark process would report the parent's size."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class PeakRSS:
    """Samples RSS in a background thread: ``peak`` is the largest value seen inside the ``with`` block."""

    def __init__(self, interval_s: float = 0.005) -> None:
        self.interval_s = interval_s
        self.start = self.peak = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> PeakRSS:
        self.start = self.peak = rss_mb()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mb())
            time.sleep(self.interval_s)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()
        self.peak = max(self.peak, rss_mb())


def matmul_peak(
    dtype: torch.dtype = torch.float32, sizes: Sequence[int] = (1024, 2048), repeat: int = 3
) -> float:
    """Measured matmul throughput of this machine (FLOP/s, best over sizes and repeats): 2·n³ per n×n product."""
    best = 0.0
    for n in sizes:
        a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
        a @ b  # warm-up (allocations, kernel choice)
        for _ in range(repeat):
            count, start = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - start) < 0.25 or count < 2:
                a @ b
                count += 1
            best = max(best, 2 * n**3 * count / elapsed)
    return best


def count_flops(fn: Callable[[], Any]) -> int:
    """FLOPs of the matmul-like operations (mm, bmm, addmm, attention, …) that ``fn`` runs, forward and backward."""
    with FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


def profile_ops(fn: Callable[[], Any], top: int = 12) -> list[dict[str, Any]]:
    """torch.profiler over one call of ``fn``: the ``top`` operators by self CPU time, with their share."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events) or 1.0
    return [
        {
            "op": e.key,
            "self_ms": e.self_cpu_time_total / 1000,
            "share": e.self_cpu_time_total / total,
            "calls": e.count,
        }
        for e in events[:top]
    ]


@contextmanager
def own_rng(state: dict[str, torch.Tensor], key: str, seed: int) -> Iterator[None]:
    """Give each benchmarked side its own torch RNG stream, so alternating them does not mix dropout masks."""
    outer = torch.get_rng_state()
    if key in state:
        torch.set_rng_state(state[key])
    else:
        torch.manual_seed(seed)
    try:
        yield
    finally:
        state[key] = torch.get_rng_state()
        torch.set_rng_state(outer)


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def cpu_flags() -> list[str]:
    return provenance_flags(FLAGS_SHOWN)


def machine_info(threads: int) -> dict[str, Any]:
    """Facts that make a timing interpretable: CPU, cores, threads, load, library versions."""
    return {
        "cpu": cpu_model(),
        "cpu_flags": cpu_flags(),
        "logical_cores": os.cpu_count(),
        "torch_threads": threads,
        "loadavg_start": list(os.getloadavg()),
        "python": platform.python_version(),
        "versions": {
            p: _version(p) for p in ("torch", "transformers", "sentence-transformers", "tokenizers", "sentcl")
        },
    }


def set_threads(threads: int) -> None:
    torch.set_num_threads(threads)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-markdown table; floats get 3 significant decimals."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
        return str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def write_json(path: str | Path, payload: dict[str, Any]) -> Path:
    """Write the result file (folders created); the finishing load average is added."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {**payload, "loadavg_end": list(os.getloadavg())}
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return path


def read_sentences(path: str | Path, limit: int | None = None) -> list[str]:
    """Non-empty stripped lines of a text file (the ``lines`` reader's rule)."""
    out: list[str] = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                out.append(line.strip())
                if limit is not None and len(out) >= limit:
                    break
    return out
