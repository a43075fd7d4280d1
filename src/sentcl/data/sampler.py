"""Batch orders: a seeded permutation per epoch, optionally with no duplicate texts in a batch."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import torch

from sentcl.rng import step_seed


def epoch_permutation(n: int, seed: int, epoch: int) -> list[int]:
    """The shuffled order of epoch ``epoch``; the same for the same (seed, epoch), so resuming can skip ahead."""
    generator = torch.Generator().manual_seed(step_seed(seed, epoch))
    return torch.randperm(n, generator=generator).tolist()


def batches(order: Sequence[int], batch_size: int) -> list[list[int]]:
    """Consecutive slices of ``order``; the last batch may be smaller (nothing dropped)."""
    return [list(order[i : i + batch_size]) for i in range(0, len(order), batch_size)]


def batches_without_duplicates(
    order: Sequence[int], keys: Sequence[Hashable], batch_size: int
) -> list[list[int]]:
    """Like ``batches`` but no two examples with equal keys share a batch (they would be false negatives).

    Greedy: walk the order and put each example into the first open batch that lacks its key; every
    example is placed exactly once, so only the last batches can come out smaller.
    """
    open_batches: list[tuple[list[int], set[Hashable]]] = []
    done: list[list[int]] = []
    for index in order:
        key = keys[index]
        target = next((b for b in open_batches if key not in b[1]), None)
        if target is None:
            target = ([], set())
            open_batches.append(target)
        target[0].append(index)
        target[1].add(key)
        if len(target[0]) == batch_size:
            open_batches.remove(target)
            done.append(target[0])
    done.extend(members for members, _ in open_batches)
    return done


def example_key(example: object) -> Hashable:
    """What makes two examples duplicates: the text itself, or the first text (anchor) of a tuple."""
    if isinstance(example, str):
        return example
    if isinstance(example, tuple) and example and isinstance(example[0], str):
        return example[0]
    text = getattr(example, "text", None)
    return text if isinstance(text, str) else repr(example)
