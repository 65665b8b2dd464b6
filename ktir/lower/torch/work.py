"""Work division: which dims of a kernel's output are split over the target's cores.

Dims are taken in the order given (outermost first unless a kernel knows better); each gets the largest number of cores that divides it
evenly and fits in the cores left, so every tile has an equal box and no tile idles on a
padded remainder. The stick dim (innermost, stored in 128-byte sticks) is split only in
whole sticks, so a tile never writes part of a stick another tile writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

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


# ---------------------------------------------------------------- fitting the scratchpad
#
# A tile's block (the division above) may hold more data than the target's scratchpad. Each
# emitter then loops inside the tile over smaller blocks, carrying partial results (a matmul's
# K loop accumulating in f32, attention's online softmax over KV blocks, reductions over chunks
# of the reduced dims). Its plans are tried in order of preference (the first is the whole
# block, no loop); each is built and measured by `fit.footprint` from the KTIR it emits, and
# the first whose peak plus one more iteration's loads (double buffering) fits is kept.

_CAPACITY: ContextVar[int | None] = ContextVar("ktir_lower_torch_scratchpad", default=None)


def capacity() -> int | None:
    """The scratchpad bytes per tile kernels must fit (None: no limit)."""
    return _CAPACITY.get()


@contextmanager
def scratchpad(nbytes: int | None) -> Iterator[None]:
    """Emit kernels for a tile scratchpad of `nbytes` (what emit_program sets from the target)."""
    token = _CAPACITY.set(nbytes)
    try:
        yield
    finally:
        _CAPACITY.reset(token)


def divisors(n: int, unit: int = 1) -> list[int]:
    """Divisors of `n` that are multiples of `unit` (all divisors when none is), largest first."""
    found = [d for d in range(n, 0, -1) if n % d == 0 and d % unit == 0]
    return found or [d for d in range(n, 0, -1) if n % d == 0]


def boxes(block: Sequence[int], dims: Sequence[int], units: Mapping[int, int] | None = None) -> list[tuple[int, ...]]:
    """Sub-blocks of `block` that split only `dims` (outermost first), largest first: the whole
    block, then the first dim of `dims` in its divisors with the later ones whole, then that
    dim at 1 and the next one split, and so on. `units[d]`: split dim d in multiples of it."""
    out = [tuple(block)]
    current = list(block)
    for d in dims:
        for c in divisors(block[d], (units or {}).get(d, 1))[1:]:
            current[d] = c
            out.append(tuple(current))
        current[d] = 1
        if tuple(current) != out[-1]:
            out.append(tuple(current))
    return out


P = TypeVar("P")


def fitted(name: str, aliases: Any, plans: Sequence[P], build: Callable[[P], Kernel],
           estimate: Callable[[P], int] | None = None, what: Callable[[P], str] | None = None,
           volume: Callable[[P], int] | None = None) -> Kernel:
    """The kernel of the first plan whose footprint fits the scratchpad (see above), or the
    first plan's when there is no limit. `estimate(plan)`: a lower bound of its peak bytes, to
    skip plans without building them; or `volume(plan)`: a measure its footprint grows in
    proportion to (the first plan's measured footprint scales it). No plan fits:
    TorchLoweringError naming the largest tensors of the smallest plan, its block and the capacity."""
    from ktir.lower.torch.errors import TorchLoweringError
    from ktir.lower.torch.fit import footprint

    cap = capacity()
    if cap is None:
        return build(plans[0])
    tight: P | None = None  # the first plan that fits without the double-buffering headroom
    last: tuple[P, Any] | None = None
    per_unit = 0.0
    for i, plan in enumerate(plans):
        if estimate is not None and i < len(plans) - 1 and estimate(plan) > cap:
            continue
        if volume is not None and i and i < len(plans) - 1 and per_unit * volume(plan) > cap:
            continue
        saved = aliases.snapshot()
        k = build(plan)
        fp = footprint(k.function())
        if fp.fits(cap, headroom=True):
            return k
        aliases.restore(saved)
        if volume is not None and i == 0:
            per_unit = fp.peak_bytes / max(volume(plan), 1)
        if tight is None and fp.fits(cap):
            tight = plan
        last = (plan, fp)
    if tight is not None:
        return build(tight)
    assert last is not None
    plan, fp = last
    block = what(plan) if what is not None else str(plan)
    raise TorchLoweringError(f"kernel {name} does not fit the {cap}-byte scratchpad of a tile even in its smallest "
                             f"blocks ({block}): it needs {fp.peak_bytes} bytes at {fp.at_op}: {fp.describe()}")


def sub_blocks(k: Kernel, div: Division, box: Sequence[int], dims: Sequence[int] | None = None) -> tuple[list[int | str], int]:
    """Open one loop per dim (of `dims`, default all) where `box` is smaller than the tile's
    block, stepping by `box`; returns the sub-block's starts and the number of loops opened
    (close them with k.close())."""
    starts: list[int | str] = list(div.starts(k))
    loops = 0
    for d in dims if dims is not None else range(len(box)):
        if box[d] < div.block[d]:
            starts[d] = k.add(starts[d], k.mul(k.open_for(0, div.block[d] // box[d], "r"), box[d]))
            loops += 1
    return starts, loops
