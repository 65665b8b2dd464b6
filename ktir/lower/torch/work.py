"""Work division: which dims of a kernel's output are split over the target's cores.

Dims are taken in the order given (outermost first unless a kernel knows better); each gets the largest number of cores that divides it
evenly and fits in the cores left, so every tile has an equal box and no tile idles on a
padded remainder. The stick dim (innermost, stored in 128-byte sticks) is split only in
whole sticks, so a tile never writes part of a stick another tile writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ktir.lower.torch.writer import Kernel


@dataclass(frozen=True)
class Division:
    grid: tuple[int, ...]  # cores per split dim (empty: one tile)
    split: tuple[int, ...]  # the split dims, in grid order
    block: tuple[int, ...]  # per-tile extent of every dim

    @property
    def cores(self) -> int:
        n = 1
        for g in self.grid:
            n *= g
        return n

    def starts(self, k: Kernel) -> list[int | str]:
        """Per dim, the tile's first index (an SSA name for split dims)."""
        cached = k.memo.get(self)
        if isinstance(cached, list):
            return list(cached)
        starts: list[int | str] = [0] * len(self.block)
        if self.split:
            for tid, d in zip(k.tiles(), self.split, strict=True):
                starts[d] = k.mul(tid, self.block[d])
        k.memo[self] = starts
        return list(starts)


def divide(shape: Sequence[int], splittable: Sequence[int], cores: int, stick: int = 64, inner: int | None = -1) -> Division:
    """Split `splittable` dims of `shape` over at most `cores` tiles; the stick dim `inner`
    (default the last; None when `shape` has no stick dim) only in whole sticks."""
    block = list(shape)
    grid: list[int] = []
    split: list[int] = []
    left = cores
    inner = len(shape) - 1 if inner == -1 else inner
    for d in splittable:
        n = shape[d]
        if left <= 1 or n <= 1:
            continue
        unit = stick if d == inner else 1
        if n % unit:
            continue
        g = _largest_divisor(n // unit, left)
        if g <= 1:
            continue
        grid.append(g)
        split.append(d)
        block[d] = n // g
        left //= g
    pairs = sorted(zip(split, grid, strict=True))
    return Division(tuple(g for _, g in pairs), tuple(d for d, _ in pairs), tuple(block))


def _largest_divisor(n: int, limit: int) -> int:
    for g in range(min(n, limit), 0, -1):
        if n % g == 0:
            return g
    return 1
