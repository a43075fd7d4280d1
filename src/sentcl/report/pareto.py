"""The Pareto set of (name, speed, quality) points: the points no other point matches or beats on both axes.

``bench.frontier_page`` draws sentcl's frontier with it; ``sentcl shrink`` marks the candidates on it.
"""

from __future__ import annotations

from collections.abc import Sequence


def pareto(points: Sequence[tuple[str, float, float]]) -> list[str]:
    """Names of the (name, speed, quality) points that no other point matches or beats on both axes with
    one strictly better, in order of speed."""
    kept = [
        (name, speed, quality)
        for name, speed, quality in points
        if not any(s >= speed and q >= quality and (s > speed or q > quality) for _, s, q in points)
    ]
    return [name for name, _, _ in sorted(kept, key=lambda p: p[1])]


__all__ = ["pareto"]
