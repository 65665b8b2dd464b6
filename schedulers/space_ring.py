"""The ring matmul's candidates and cost (`schedulers.emit_ring` emits them).

Grid [gm, g]: g consecutive tiles share A's row block of bm = M / gm rows, each owning N / g
columns of C in blocks of bn; A's row block goes round the group in chunks of bm x kp, one
hop per step, while each tile streams its own kp x bn blocks of B from global memory.

Per tile, the timeline runs the transfers of a step through the tile's network port one at a
time (the B block from memory, then the chunk from the left neighbour) while the matrix unit
multiplies the chunk it holds; a step costs the larger of the two. The rates are the
timeline's fixed rates in static sharing (`link_shares`, `MODEL_SHARING`; the timeline's own
default, max-min shares, gives every route at least as much). Static shares: the memory
channel split evenly over the tiles that use it, each ring link split over every tile whose
memory traffic or ring chunk crosses it (so a link next to a memory attach point, which
carries the memory traffic of up to eight tiles, is the slow one and the whole ring waits for
it). Max-min static shares give the ring what the memory readers cannot use of those links. B crosses the memory channel gm times and A N / bn / g
times in total; every other transfer of A is one ring hop.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np

from ktir.targets.timeline import BUFFERS, Sharing, maxmin_shares

from .cost import Figures
from .kernels import MatmulKernel, Operand

RING = 5  # the loop order's number in `spaces.ORDERS`
ROUNDED_CHUNK = 65536  # bytes of C rounded and stored at a time


@lru_cache(maxsize=4096)
def chunk_rows(bm: int, bn: int, itemsize: int, limit: int = ROUNDED_CHUNK) -> int:
    """Rows per rounded chunk of the accumulator: the largest divisor of bm whose chunk of C
    stays within `limit` bytes (at least one row)."""
    best = 1
    for d in range(1, bm + 1):
        if bm % d == 0 and d * bn * itemsize <= limit:
            best = d
    return best


EVEN_BLOCKS = 8  # the most blocks of columns per tile that `even_widths` proposes widths for


@lru_cache(maxsize=4096)
def even_widths(nt: int, step: int, most: int = EVEN_BLOCKS) -> frozenset[int]:
    """Widths cutting a tile's nt columns into b = 1 .. `most` blocks as evenly as whole granules
    of `step` columns allow: ceil(nt / (b step)) step, the last block taking the rest (none
    when nt is not a whole number of granules: a block must end on a granule)."""
    if nt % step:
        return frozenset()
    return frozenset(-(-nt // (b * step)) * step for b in range(1, most + 1) if b * step <= nt)


# The analytic models charge each channel at its static (equal) share: the floor of what the
# timeline's work-conserving default ("maxmin") gives every route but an op whose own flows cross
# one channel together. A model that assumed the max-min rates picked ring schedules whose
# stalls between sub-rings it does not see (28-kernel table 1.123 on the timeline against 1.103);
# the timeline re-rank (`schedulers.rerank`) decides between the model's best points.
MODEL_SHARING: Sharing = "static"


def rates(fig: Figures, gm: int, g: int) -> tuple[np.ndarray, np.ndarray]:
    """Per tile of the ring form on grid [gm, g]: its memory and ring rates, bytes per cycle."""
    return _rates(fig.machine, gm, g, MODEL_SHARING)


@lru_cache(maxsize=256)
def _rates(machine: object, gm: int, g: int, sharing: Sharing) -> tuple[np.ndarray, np.ndarray]:
    flows = tuple(((t // g) * g + (t % g - 1) % g, t) for t in range(gm * g))  # from the left neighbour in the group
    mem, ring = link_shares(machine, gm * g, flows, sharing)
    return mem, np.array(ring)


def link_shares(machine: object, active: int, flows: tuple[tuple[int, int], ...],
                sharing: Sharing | None = None) -> tuple[np.ndarray, tuple[float, ...]]:
    """The timeline's fixed rates (`ktir.targets.timeline`; `sharing` None: `MODEL_SHARING`) when
    tiles 0 .. active - 1 each read and write global memory and each (source, destination) flow
    moves data between two tiles' scratchpads, charged to the destination. "static": every
    channel split evenly over the tiles whose traffic crosses it; "maxmin": the timeline's
    `maxmin_shares` of those routes. Returns each tile's memory rate (the lower of its reads'
    and its writes') and each flow's rate, bytes per cycle (never above one DMA engine's)."""
    mode = sharing or MODEL_SHARING
    if mode == "maxmin":
        return _maxmin_shares(machine, active, flows)
    return _static_shares(machine, active, flows)


@lru_cache(maxsize=512)
def _maxmin_shares(machine: object, active: int, flows: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, tuple[float, ...]]:
    m = machine
    memory = f"memory.{m.global_name}"  # type: ignore[attr-defined]
    own = [[(memory, *(f"link.{x}" for x in m.memory_route(t, inbound).links)) for inbound in (True, False)]  # type: ignore[attr-defined]
           for t in range(active)]
    ring = [tuple(f"link.{x}" for x in m.topology.route(src, dst)) for src, dst in flows]  # type: ignore[attr-defined]
    routes: dict[int, set[tuple[str, ...]]] = {t: set(own[t]) for t in range(active)}
    for (_, dst), r in zip(flows, ring, strict=True):
        if r:  # a flow between a tile and itself moves nothing over the links (the timeline drops it)
            routes.setdefault(dst, set()).add(r)
    shares = maxmin_shares(routes, m.channel_capacity(), m.dma_bw)  # type: ignore[attr-defined]
    mem = np.array([min(shares.rate[(t, r)] for r in own[t]) for t in range(active)])
    return mem, tuple(shares.rate[(dst, r)] if r else float(m.dma_bw) for (_, dst), r in zip(flows, ring, strict=True))  # type: ignore[attr-defined]


@lru_cache(maxsize=512)
def _static_shares(machine: object, active: int, flows: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, tuple[float, ...]]:
    m = machine
    topo = m.topology  # type: ignore[attr-defined]
    users: dict[str, set[int]] = {}
    memory = [[m.memory_route(t, inbound).links for inbound in (True, False)] for t in range(active)]  # type: ignore[attr-defined]
    routes = [topo.route(src, dst) for src, dst in flows]
    for t in range(active):
        for links in memory[t]:
            for link in links:
                users.setdefault(link, set()).add(t)
    for (_, dst), links in zip(flows, routes, strict=True):
        for link in links:
            users.setdefault(link, set()).add(dst)
    dma = m.dma_bw  # type: ignore[attr-defined]
    cap = topo.capacity

    def share(links: tuple[str, ...]) -> float:
        return min([dma] + [cap[link] / len(users[link]) for link in links])

    channel = m.global_bw / active  # type: ignore[attr-defined]
    mem = np.array([min([channel] + [share(r) for r in memory[t]]) for t in range(active)])
    return mem, tuple(share(r) for r in routes)


def ring_candidates(k: MatmulKernel, fig: Figures, bn_all: list[int], bk_all: list[int]) -> dict[str, np.ndarray]:
    """Every ring schedule: grids [gm, g] (g >= 2 tiles per group) within the target, blocks of
    bn columns within a tile's N / g (a last, narrower block takes the rest, stick-aligned like
    bn), kp dividing K / g."""
    step = max(1, fig.granularity // max(k.b.itemsize, k.c.itemsize))  # elements per granule
    rows = []
    for g in range(2, fig.tiles + 1):
        if k.N % g:
            continue
        for gm in range(1, fig.tiles // g + 1):
            if k.M % gm:
                continue
            for bn in bn_all:
                if bn > k.N // g or (k.N // g) % bn % step:
                    continue
                rows += [(gm, g, k.M // gm, bn, kp) for kp in bk_all if k.K % (g * kp) == 0]
    arr = np.array(rows, dtype=np.int64).reshape(-1, 5)
    n = arr.shape[0]
    return {"gm": arr[:, 0], "gn": arr[:, 1], "bm": arr[:, 2], "bn": arr[:, 3], "bk": arr[:, 4],
            "order": np.full(n, RING, np.int64), "db": np.ones(n, np.int64), "pp": np.zeros(n, np.int64)}


def ring_cost(k: MatmulKernel, fig: Figures, c: dict[str, np.ndarray],
              moved: Callable[[Operand, tuple[np.ndarray, np.ndarray]], np.ndarray]) -> tuple[np.ndarray, ...]:
    """Cycles, scratchpad, global bytes and ct_local bytes of ring schedules. `moved(operand,
    block)` is the bytes a transfer of a block moves from global memory (whole granules per
    contiguous run, so a transposed operand costs its short runs)."""
    bn = c["bn"].astype(np.float64)
    nt = k.N / c["gn"].astype(np.float64)
    full = np.floor(nt / bn)
    rest = nt - full * bn  # the tile's last, narrower block of columns (0: none)
    main = _blocks(k, fig, c, bn, moved)
    last = _blocks(k, fig, c, np.where(rest > 0, rest, bn), moved)
    has = rest > 0
    cycles = full * main[0] + np.where(has, last[0], 0.0)
    gbytes = full * main[2] + np.where(has, last[2], 0.0) + k.M * k.N * k.c.itemsize
    local = full * main[3] + np.where(has, last[3], 0.0) + k.M * k.N * k.c.itemsize
    return cycles, main[1], gbytes, local


def _blocks(k: MatmulKernel, fig: Figures, c: dict[str, np.ndarray], bn: np.ndarray,
            moved: Callable[[Operand, tuple[np.ndarray, np.ndarray]], np.ndarray]) -> tuple[np.ndarray, ...]:
    """Per block of bn columns of every tile: cycles, scratchpad, global and ct_local bytes (all tiles)."""
    gm_i, g_i = c["gm"], c["gn"]
    gm, g = gm_i.astype(np.float64), g_i.astype(np.float64)
    bm, kp = c["bm"].astype(np.float64), c["bk"].astype(np.float64)
    ea, eb, ec = k.a.itemsize, k.b.itemsize, k.c.itemsize
    m = fig.machine
    q = k.K / (g * kp)  # sub-rings per block
    moved_a, moved_b = moved(k.a, (bm, kp)), moved(k.b, (kp, bn))
    chunk, b_blk = bm * kp * ea, kp * bn * eb
    compute = bm * bn * kp / fig.mac_rate(k.a.dtype) + fig.matrix_startup
    # through each tile's port, one after the other: its own chunk, each step's B block and all but
    # the last step's chunk from the neighbour (dense between scratchpads, whatever A's layout);
    # the ring moves at the pace of its slowest tile
    port_sub, mem_rate = np.zeros_like(bm), np.zeros_like(bm)
    for pair in {(int(a), int(b)) for a, b in np.unique(np.stack([gm_i, g_i]), axis=1).T}:
        rows = (gm_i == pair[0]) & (g_i == pair[1])
        mem_t, ring_t = rates(fig, *pair)
        per_tile = ((moved_a[rows, None] + g[rows, None] * moved_b[rows, None]) / mem_t
                    + (g[rows, None] - 1) * fig.rounded(chunk[rows])[:, None] / ring_t)
        port_sub[rows] = per_tile.max(axis=1)
        mem_rate[rows] = mem_t.min()
    rc = np.array([chunk_rows(int(a), int(b), ec) for a, b in zip(c["bm"], bn, strict=True)], dtype=np.float64)
    store = bm * bn * ec / mem_rate
    rounding = (bm / rc) * (rc * bn / fig.vector_rate("f32") + fig.vector_startup)
    # A block of columns ends with its rounding and store, which every later transfer waits for (the
    # tile's DMA queue and port keep program order): so each block starts with its first chunk and B
    # block arriving, then runs at the pace of the matrix unit or of the port (whose last transfer
    # still leaves one product to compute), whichever is slower
    fill = fig.transfer_fixed + (moved_a + moved_b) / mem_rate
    hop = m.dma_setup + m.topology.hop_latency
    block = np.maximum(fill + q * g * compute, fig.transfer_fixed + q * port_sub + compute) + q * hop
    cycles = block + rounding + store
    scratch = bm * bn * 4 + ring_buffers(chunk, b_blk, rc * bn * (4 + ec))
    active = gm * g
    gbytes = active * q * (moved_a + g * moved_b)
    local = gbytes + active * q * (g - 1) * chunk
    return cycles, scratch, gbytes, local


def ring_buffers(chunk: np.ndarray, b_blk: np.ndarray, rounding: np.ndarray) -> np.ndarray:
    """Scratchpad besides the accumulator of a ring's block of columns (`emit_shared.ring_k_loop`),
    as the timeline holds it: each op owns the buffers its program order holds at once, at least
    `BUFFERS` (`ktir.targets.timeline`). During the K loop: the chunk being multiplied and the one
    arriving (the consume's two buffers) and the next sub-ring's own chunk, loaded once the DMA
    queue reaches it; B's two blocks of the loop and the next sub-ring's first: three chunks and
    three B blocks. At the end: the chunks of the accumulator extracted and rounded (`rounding`
    bytes each) in the buffers their ops own, while the next block's own chunk and first B block
    may already arrive behind the last store."""
    return np.maximum(3 * chunk + 3 * b_blk, BUFFERS * rounding + chunk + b_blk)


def describe_ring(p: dict[str, int], k: MatmulKernel) -> str:
    """The loop order of a ring schedule, as the report prints it."""
    g, kp = p["gn"], p["bk"]
    rest = k.N // g % p["bn"]
    blocks = f"{p['bn']} columns" + (f" (the last block {rest})" if rest else "")
    return (f"ring: tile (i, j) owns C rows [i*{p['bm']}, +{p['bm']}) x columns [j*{k.N // g}, +{k.N // g}); "
            f"for each block of {blocks}, for each of {k.K // (g * kp)} sub-rings: load own A chunk "
            f"({p['bm']}x{kp}) from memory, then {g} steps of (pass the chunk to the right neighbour, receive the "
            f"left neighbour's, multiply by the B block {kp}x{p['bn']} streamed from memory); "
            f"A crosses memory once per block of columns, each other A transfer is one ring hop")
