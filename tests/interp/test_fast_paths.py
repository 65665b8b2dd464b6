"""Fast paths of the interpreter against the definitions they shortcut.

- The lane-offset lattice (lockstep_memory._lattice, tile_desc): offsets are "evenly
  spaced" iff every one equals first + sum(index * step); checked against that sum, built
  element by element, on random lattices and on lattices with one offset moved.
- The disjointness of a vectorised loop's lane spans (lockstep._disjoint_per_tile): it must
  give up exactly when two non-empty spans of one tile share a byte (checked pair by pair).
- Two-operand contractions (ops/linalg._einsum2): the same bits as
  np.einsum(spec, a, b, optimize=True), whose plan it reuses.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from reference_interp.lockstep import Diverged, _disjoint_per_tile
from reference_interp.lockstep_memory import _bounds, _covers_all, _lattice, lattice_descs, tile_desc
from reference_interp.memory import BoxDesc, IdxDesc, MemoryView
from reference_interp.ops.linalg import _einsum2

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _is_lattice(a: np.ndarray, strict: bool) -> tuple[int, tuple[int, ...]] | None:
    """The definition, by differences: along every dimension, each offset minus the one before
    it is the same number everywhere (that dimension's step), never negative, and not zero
    where `strict` and the dimension has more than one lane."""
    if a.ndim == 0:
        return int(a), ()
    if a.size == 0:
        return None
    x = a.astype(object)  # Python integers: no wrap-around in the differences
    steps = []
    for k, n in enumerate(a.shape):
        diffs = set(np.diff(x, axis=k).reshape(-1).tolist()) if n > 1 else {0}
        if len(diffs) != 1:
            return None
        (step,) = diffs
        if step < 0 or (strict and n > 1 and step == 0):
            return None
        steps.append(int(step))
    return int(a.reshape(-1)[0]), tuple(steps)


@st.composite
def offsets(draw: st.DrawFn) -> np.ndarray:
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    if draw(st.booleans()):  # more than 64 lanes: the numpy comparison
        shape = (*shape, draw(st.integers(20, 40)))
    first = draw(st.integers(0, 1 << 20))
    steps = [draw(st.sampled_from([0, 1, 2, 4, 64, 4096, -8])) for _ in shape]
    grid = np.indices(shape, dtype=np.int64)
    a = first + sum((g * s for g, s in zip(grid, steps, strict=True)), np.zeros(shape, np.int64))
    if draw(st.booleans()):
        flat = a.reshape(-1)
        k = draw(st.integers(0, flat.size - 1))
        flat[k] += draw(st.sampled_from([-3, -1, 1, 2, 100]))
    if draw(st.booleans()) and a.ndim > 1 and a.shape[0] > 1:
        a = np.broadcast_to(a[:1], a.shape)  # a broadcast (read-only, zero-stride) array, as lanes are
    return np.asarray(a)


@SETTINGS
@given(offsets(), st.booleans())
def test_lattice_is_the_definition(a: np.ndarray, strict: bool) -> None:
    assert _lattice(a, strict) == _is_lattice(a, strict)
    assert _lattice(a.copy(), strict) == _is_lattice(a, strict)  # the answer kept for these offsets


@SETTINGS
@given(offsets())
def test_tile_desc_covers_exactly_the_bytes_of_the_lanes_boxes(a: np.ndarray) -> None:
    ext, bstrides, isz = (2, 3), (64, 4), 4
    d = tile_desc(a, ext, bstrides, isz)
    rel = (np.arange(2)[:, None] * 64 + np.arange(3)[None, :] * 4).reshape(-1)
    want = np.unique(a.reshape(-1, 1) + rel[None, :])  # the bytes (repeated lanes touch them once)
    if isinstance(d, BoxDesc):
        grids = np.indices(d.ext, dtype=np.int64)
        got = d.b0 + sum((g * s for g, s in zip(grids, d.bstrides, strict=True)), np.zeros(d.ext, np.int64))
    else:
        assert isinstance(d, IdxDesc)
        got = d.offs
    assert np.array_equal(np.unique(got), want)
    assert d.itemsize == isz


@st.composite
def spans(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    tiles = draw(st.integers(1, 3))
    lanes = draw(st.integers(2, 6))
    lo = np.array(draw(st.lists(st.integers(0, 60), min_size=tiles * lanes, max_size=tiles * lanes)), np.int64)
    if draw(st.booleans()):  # the common case: ascending, often disjoint
        lo = np.sort(lo.reshape(tiles, lanes), axis=1).reshape(-1)
    length = np.array(draw(st.lists(st.integers(-2, 12), min_size=tiles * lanes, max_size=tiles * lanes)), np.int64)
    return lo.reshape(tiles, lanes), (lo + length).reshape(tiles, lanes)


@SETTINGS
@given(spans())
# an empty span between two that overlap, each span ending before the next begins
@example((np.array([[0, 11, 5]]), np.array([[10, 3, 6]])))
def test_disjoint_spans_give_up_exactly_on_a_shared_byte(s: tuple[np.ndarray, np.ndarray]) -> None:
    lo, hi = s
    clash = any(
        lo[t, i] <= hi[t, i] and lo[t, j] <= hi[t, j] and lo[t, i] <= hi[t, j] and lo[t, j] <= hi[t, i]
        for t in range(lo.shape[0]) for i in range(lo.shape[1]) for j in range(i + 1, lo.shape[1])
    )
    if clash:
        with pytest.raises(Diverged):
            _disjoint_per_tile(lo, hi, 7)
    else:
        _disjoint_per_tile(lo, hi, 7)


SPECS = [
    ("ac,bc->ab", (1, 64), (128, 64)),
    ("mk,nk->mn", (37, 32), (48, 32)),
    ("km,kn->mn", (32, 64), (32, 48)),
    ("mn,n->m", (64, 32), (32,)),
    ("n,n->", (100,), (100,)),
    ("bmk,bnk->bmn", (3, 16, 8), (3, 24, 8)),
    ("zac,zbc->zab", (4, 1, 64), (4, 128, 64)),
    ("abc,acd->abd", (2, 3, 4), (2, 4, 5)),
    ("ab,ab->ab", (5, 6), (5, 6)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize(("spec", "sa", "sb"), SPECS)
def test_contraction_is_einsums_bits(spec: str, sa: tuple[int, ...], sb: tuple[int, ...], dtype: type) -> None:
    rng = np.random.default_rng(len(spec) + len(sa))
    for _ in range(2):  # the second call replays the stored plan
        a: np.ndarray = (rng.standard_normal(sa) * 8).astype(dtype)
        b: np.ndarray = (rng.standard_normal(sb) * 8).astype(dtype)
        got = np.asarray(_einsum2(spec, a, b))
        want = np.asarray(np.einsum(spec, a, b, optimize=True))
        assert got.shape == want.shape and got.dtype == want.dtype
        assert got.tobytes() == want.tobytes()


@st.composite
def box_accesses(draw: st.DrawFn) -> list[tuple[bool, BoxDesc]]:
    """Writes and reads of 2-byte elements in a 256-byte scratchpad: rows, blocks of whole
    rows, strided rows and blocks with gaps."""
    out = []
    for _ in range(draw(st.integers(1, 12))):
        write = draw(st.booleans())
        b0 = 2 * draw(st.integers(0, 40))
        if draw(st.booleans()):
            n, s = draw(st.integers(0, 20)), draw(st.sampled_from([2, 2, 4, 6]))
            out.append((write, BoxDesc(b0, (n,), (s,), 2)))
        else:
            r, c = draw(st.integers(1, 4)), draw(st.integers(1, 8))
            row = draw(st.sampled_from([2 * c, 2 * c, 2 * c + 4]))
            out.append((write, BoxDesc(b0, (r, c), (row, 2), 2)))
    return out


@SETTINGS
@given(box_accesses())
def test_reads_of_unwritten_bytes_are_found_whatever_the_initialised_prefix(seq: list[tuple[bool, BoxDesc]]) -> None:
    """The initialised prefix (Allocation.init_upto) only skips what the init map would pass:
    a read fails exactly when one of its bytes was never written (a set of bytes as oracle)."""
    from reference_interp.memory import Allocation
    from reference_interp.races import RaceTracker, UninitFound

    alloc = Allocation("ct_local[0]", "ct_local", 0, np.zeros(256, np.uint8), 256, owner=0, capacity=256,
                       track_init=True)
    alloc.private = True
    tracker = RaceTracker(1)
    written: set[int] = set()
    for write, d in seq:
        grids = np.indices(d.ext).reshape(len(d.ext), -1)
        elems = d.b0 + sum(g * s for g, s in zip(grids, d.bstrides, strict=True)) if grids.size else np.zeros(0, int)
        touched = {int(e) + j for e in np.atleast_1d(elems) for j in range(d.itemsize)} if d.count() else set()
        if write:
            tracker.write(alloc, d, 0, "ktdp.store")
            written |= touched
        elif touched <= written:
            tracker.read(alloc, d, 0, "ktdp.load")
        else:
            with pytest.raises(UninitFound):
                tracker.read(alloc, d, 0, "ktdp.load")
        assert set(range(alloc.init_upto)) <= written


@st.composite
def lane_stores(draw: st.DrawFn) -> tuple[int, MemoryView, np.ndarray, tuple[int, ...]]:
    """A store of every lane's box (extents and element strides of a view) at lattice offsets,
    into an allocation of as many bytes as the lanes write (sometimes one element more)."""
    dt = np.dtype(draw(st.sampled_from(["u1", "f2", "f4"])))
    isz = dt.itemsize
    ext = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=2)))
    strides = tuple(draw(st.integers(1, 6)) for _ in ext)
    lanes = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=2)))
    steps = [draw(st.integers(0, 12)) * isz + draw(st.sampled_from([0, 0, 0, 1])) for _ in lanes]
    first = draw(st.sampled_from([0, 0, 0, isz]))
    off = first + sum(np.arange(n).reshape([-1 if j == k else 1 for j in range(len(lanes))]) * s
                      for k, (n, s) in enumerate(zip(lanes, steps, strict=True)))
    off = np.broadcast_to(np.asarray(off, dtype=np.int64), lanes)
    nbytes = (int(np.prod(lanes)) * int(np.prod(ext)) + draw(st.sampled_from([0, 0, 0, 1]))) * isz
    view = MemoryView("global", None, 0, tuple(64 for _ in ext), strides, dt)
    return nbytes, view, off, ext


@SETTINGS
@given(lane_stores())
def test_a_store_said_to_cover_the_array_writes_each_byte_once(store: tuple[int, MemoryView, np.ndarray, tuple[int, ...]]) -> None:
    """lockstep_memory._covers_all (own() then skips copying the caller's bytes): when it says
    so, the lanes' boxes write every byte of the allocation exactly once."""
    nbytes, view, off, ext = store
    if not _covers_all(nbytes, view, off, ext):
        return
    rel = [sum(i * s for i, s in zip(p, view.bstrides, strict=True)) for p in itertools.product(*(range(e) for e in ext))]
    written = sorted(int(o) + r + j for o in off.reshape(-1) for r in rel for j in range(view.itemsize))
    assert written == list(range(nbytes))


def test_interleaved_row_blocks_cover_the_array_and_half_rows_do_not() -> None:
    """The embedding's store in lockstep (4 tiles x 2 iterations of 3-row blocks of 8 f2 elements,
    rows interleaved between tiles) covers its 24 x 8 array; the left halves of the rows (rope's
    first store) do not, nor the blocks of 3 of the 4 tiles."""
    view = MemoryView("global", None, 0, (24, 8), (8, 1), np.dtype("f2"))
    off = (np.arange(4)[:, None] * 3 * 16 + np.arange(2)[None, :] * 12 * 16).astype(np.int64)
    assert _covers_all(24 * 16, view, off, (3, 8))
    assert not _covers_all(24 * 16, view, off, (3, 4))
    assert not _covers_all(24 * 16, view, off[:3], (3, 8))


def _desc_key(d: object) -> tuple[object, ...]:
    if isinstance(d, BoxDesc):
        return ("box", d.b0, d.ext, d.bstrides, d.itemsize, d.lo, d.hi)
    assert isinstance(d, IdxDesc)
    return ("idx", tuple(d.offs.tolist()), d.itemsize, d.lo, d.hi)


@SETTINGS
@given(offsets())
def test_lattice_descs_are_tile_desc_of_each_tile(a: np.ndarray) -> None:
    """lockstep_memory.lattice_descs (descriptors from the lanes' strict lattice) against
    tile_desc of each tile's own offsets, for every strict lattice of the strategy."""
    lat = _lattice(a, True)
    if lat is None:
        return
    ext, bstrides, isz = (2, 3), (64, 4), 4
    got = lattice_descs(lat, a.shape, ext, bstrides, isz)
    want = [(t, tile_desc(a[t], ext, bstrides, isz)) for t in range(a.shape[0])]
    assert [(t, _desc_key(d)) for t, d in got] == [(t, _desc_key(d)) for t, d in want]


class _Alloc:
    growable = False
    capacity = None

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


def _bounds_outcome(a: np.ndarray, span: int, isz: int, nbytes: int, lat: object) -> str:
    view = MemoryView.__new__(MemoryView)
    view.alloc = _Alloc(nbytes)  # type: ignore[assignment]  # _bounds reads nbytes, growable, capacity
    view.itemsize = isz
    try:
        _bounds(None, view, a, span, lat)  # type: ignore[arg-type]
    except Diverged as e:
        return e.why
    return "ok"


@SETTINGS
@given(offsets(), st.integers(0, 300), st.sampled_from([1, 2, 4, 8]), st.integers(0, 1 << 21))
def test_bounds_from_the_lattice_are_the_bounds_from_the_offsets(a: np.ndarray, span: int, isz: int, nbytes: int) -> None:
    lat = _lattice(a, True)
    if lat is None:
        return
    assert _bounds_outcome(a, span, isz, nbytes, lat) == _bounds_outcome(a, span, isz, nbytes, None)
