"""Encode speed of several models on one machine, timed in alternating rounds (the machine may be shared).

Each model encodes the same sentences once per round and again until ``min_seconds`` have passed (a fast
model is timed over many calls); the rounds rotate who goes first. The figures are the median sentences/s
over rounds and the median over rounds of each model's ratio to the reference model's rate **in the same
round**, which a load that changes between rounds affects least. ``cpu_per_wall``: CPU seconds of the process
per second of timing (about the threads at work). ``bench.frontier`` and ``sentcl shrink`` time with it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

#: encode sentences -> (wall seconds, CPU seconds, (N, D) vectors)
EncodeTimed = Callable[[list[str]], tuple[float, float, np.ndarray]]


def timed(encode: Callable[[list[str]], Any]) -> EncodeTimed:
    """A plain ``encode(sentences)`` that also returns its wall and CPU seconds."""

    def run(sentences: list[str]) -> tuple[float, float, np.ndarray]:
        start, cpu = time.perf_counter(), time.process_time()
        out = encode(sentences)
        return time.perf_counter() - start, time.process_time() - cpu, np.asarray(out)

    return run


def time_point(
    encode: EncodeTimed, sentences: list[str], min_seconds: float
) -> tuple[float, float, np.ndarray]:
    """Sentences/s of ``encode`` over as many passes as fill ``min_seconds``, its CPU seconds per wall second,
    and its vectors (N, D)."""
    done, seconds, cpu, out = 0, 0.0, 0.0, None
    while seconds < min_seconds or out is None:
        spent, spent_cpu, out = encode(sentences)
        seconds, cpu = seconds + spent, cpu + spent_cpu
        done += len(sentences)
    return done / seconds, cpu / seconds, np.asarray(out, np.float32)


def alternate_rounds(
    points: dict[str, EncodeTimed],
    sentences: list[str],
    rounds: int,
    min_seconds: float,
    log: Callable[[str], None] | None = print,
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, np.ndarray]]:
    """Each point's rate and CPU per wall second per round (rotating who goes first), and its last vectors;
    a warm-up call of every point comes first (first-call allocations, quantised kernels, lazy imports)."""
    names = list(points)
    for name in names:
        points[name](sentences[:64])
    rates: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    outputs: dict[str, np.ndarray] = {}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            rate, busy, outputs[name] = time_point(points[name], sentences, min_seconds)
            rates[name].append(rate)
            cpu[name].append(busy)
        if log is not None:
            log(f"round {r + 1}/{rounds}: " + ", ".join(f"{n} {rates[n][-1]:.0f}/s" for n in names))
    return rates, cpu, outputs


def speed_rows(
    rates: dict[str, list[float]], cpu: dict[str, list[float]], reference: str
) -> dict[str, dict[str, Any]]:
    """Each point's median rate, its per-round ratios to ``reference`` and their median (``speed_vs_teacher``),
    and its median CPU per wall second."""
    rows = {}
    for name, own in rates.items():
        ratios = [a / b for a, b in zip(own, rates[reference], strict=True)]
        rows[name] = {
            "sentences_per_s": statistics.median(own),
            "round_rates": own,
            "speed_vs_teacher": statistics.median(ratios),
            "round_ratios": ratios,
            "cpu_per_wall": statistics.median(cpu[name]),
        }
    return rows


__all__ = ["EncodeTimed", "alternate_rounds", "speed_rows", "time_point", "timed"]
