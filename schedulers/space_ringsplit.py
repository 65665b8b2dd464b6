"""The ring matmul with K split (`emit_ringsplit`): its candidates and cost.

Grid [sk, g], tile t = s + sk j. Per block of bn columns each tile runs the ring of
`space_ring` over K's share s (q = K / (sk g kp) sub-rings of g steps: its own A chunk and
each step's B block from memory, g - 1 chunks from tile t - sk), then the sk tiles of ring
position j send their f32 partials to the first (s = 0) in one receive, which adds, rounds
and stores them. Rates are the timeline's fixed rates in its default sharing mode (static
shares, or max-min static shares: `_rates`) for the kernel's flows: the ring's (t - sk -> t) and the partials' (t -> its group's first); the
partials of one receive that cross the same link split its share between them. When sk
divides M the partials may also be reduce-scattered (column `rs`, `emit_ringsplit`): every
tile receives the other splits' chunks of its own 1 / sk of the rows and stores them, so every
tile writes memory and receives partials (more users of the links near the memory attach
points, so which is faster depends on the shape: both are priced).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np

from ktir.targets.timeline import BUFFERS, Sharing, maxmin_shares

from .cost import Figures
from .kernels import MatmulKernel, Operand
from .space_ring import MODEL_SHARING, RING, ROUNDED_CHUNK, chunk_rows, ring_buffers


def scattered(M: int, sk: int) -> bool:
    """Whether the partials of a split ring over M rows can be reduce-scattered (`emit_ringsplit`)."""
    return sk > 1 and M % sk == 0

SPLITS = (2, 4, 8)


def candidates(k: MatmulKernel, fig: Figures, bn_all: list[int], bk_all: list[int]) -> dict[str, np.ndarray]:
    """Every split ring: sk K splits of g = tiles / sk ring positions, all M rows per tile, blocks of
    bn columns dividing the position's N / g columns, chunks of kp dividing K / (sk g); partials
    gathered on the first tile (rs = 0) or, when sk divides M, also reduce-scattered (rs = 1)."""
    rows = []
    if k.init == 0.0:  # (every split's partial starts from 0; a non-zero start would be added sk times)
        for sk in SPLITS:
            g = fig.tiles // sk
            if g < 2 or k.N % g or k.K % (sk * g):
                continue
            nt = k.N // g
            for rs in (0, 1) if scattered(k.M, sk) else (0,):
                rows += [(sk, g, bn, kp, rs) for bn in bn_all if nt % bn == 0 for kp in bk_all
                         if k.K % (sk * g * kp) == 0]
    arr = np.array(rows, dtype=np.int64).reshape(-1, 5)
    n = arr.shape[0]
    return {"sk": arr[:, 0], "gn": arr[:, 1], "bn": arr[:, 2], "bk": arr[:, 3], "rs": arr[:, 4],
            "bm": np.full(n, k.M, np.int64), "gm": np.ones(n, np.int64), "order": np.full(n, RING, np.int64),
            "db": np.ones(n, np.int64), "pp": np.zeros(n, np.int64)}


def scatters(k: MatmulKernel, c: dict[str, np.ndarray]) -> np.ndarray:
    """Per split-ring row, whether its partials are reduce-scattered: its `rs` column, or where
    the columns have none, whenever sk divides M."""
    default = np.array([scattered(k.M, int(s)) for s in c["sk"]], dtype=bool)
    rs = c.get("rs")
    return default if rs is None else (rs.astype(bool) & default)


def _rates(machine: object, sk: int, g: int, scatter: bool = False,
           sharing: Sharing = MODEL_SHARING) -> tuple[np.ndarray, np.ndarray, float]:
    """Per tile of grid [sk, g]: its memory rate and its ring receive's rate; and the slowest
    partial's rate into a group's first tile (bytes per cycle), in `sharing` (the models':
    `space_ring.MODEL_SHARING`)."""
    if sharing == "maxmin":
        return _maxmin_rates(machine, sk, g, scatter)
    return _static_rates(machine, sk, g, scatter)


@lru_cache(maxsize=64)
def _maxmin_rates(machine: object, sk: int, g: int, scatter: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """`_rates` under max-min static sharing: the timeline's `maxmin_shares` of the routes below
    (`_static_rates`), the partials of one receive splitting their tile's use of a link they
    all cross."""
    m = machine
    tiles = sk * g
    topo = m.topology  # type: ignore[attr-defined]
    memory = f"memory.{m.global_name}"  # type: ignore[attr-defined]

    def channels(links: tuple[str, ...], through: str | None = None) -> tuple[str, ...]:
        return ((through,) if through else ()) + tuple(f"link.{x}" for x in links)

    reads = [channels(m.memory_route(t, True).links, memory) for t in range(tiles)]  # type: ignore[attr-defined]
    ring = [channels(topo.route((t - sk) % tiles, t)) for t in range(tiles)]
    receivers = range(tiles) if scatter else range(0, tiles, sk)
    partials = {t: [channels(topo.route(t - t % sk + x, t)) for x in range(sk) if x != t % sk] for t in receivers}
    routes: dict[int, set[tuple[str, ...]]] = {t: {reads[t]} for t in range(tiles)}
    for t in range(tiles):
        if scatter or t % sk == 0:
            routes[t].add(channels(m.memory_route(t, False).links, memory))  # type: ignore[attr-defined]
        routes[t].add(ring[t])
    for t, rs in partials.items():
        routes[t].update(rs)
    shares = maxmin_shares(routes, m.channel_capacity(), m.dma_bw)  # type: ignore[attr-defined]
    slowest = float(m.dma_bw)  # type: ignore[attr-defined]
    for t, rs in partials.items():
        crossing: dict[str, int] = {}
        for r in rs:
            for c in r:
                crossing[c] = crossing.get(c, 0) + 1
        for r in rs:
            slowest = min([slowest, shares.rate[(t, r)]] + [shares.use[(t, c)] / crossing[c] for c in r])
    return (np.array([shares.rate[(t, reads[t])] for t in range(tiles)]),
            np.array([shares.rate[(t, ring[t])] for t in range(tiles)]), slowest)


@lru_cache(maxsize=64)
def _static_rates(machine: object, sk: int, g: int, scatter: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """`_rates` under static sharing: each channel split over the tiles whose bytes cross it
    anywhere in the kernel (every tile reads memory, only the first tile of each group writes
    it, or every tile when the partials are reduce-scattered), a link's share split again
    between the partials of the one receive that cross it, never above one DMA engine."""
    m = machine
    tiles = sk * g
    topo = m.topology  # type: ignore[attr-defined]
    dma = float(m.dma_bw)  # type: ignore[attr-defined]
    ring = [topo.route((t - sk) % tiles, t) for t in range(tiles)]
    receivers = range(tiles) if scatter else range(0, tiles, sk)
    partials = {t: [topo.route(t - t % sk + x, t) for x in range(sk) if x != t % sk] for t in receivers}
    users: dict[str, set[int]] = {}
    reads = [m.memory_route(t, True).links for t in range(tiles)]  # type: ignore[attr-defined]
    for t in range(tiles):
        for link in reads[t]:
            users.setdefault(link, set()).add(t)
        if scatter or t % sk == 0:
            for link in m.memory_route(t, False).links:  # type: ignore[attr-defined]
                users.setdefault(link, set()).add(t)
    for t, links in enumerate(ring):
        for link in links:
            users.setdefault(link, set()).add(t)
    for first, routes in partials.items():
        for links in routes:
            for link in links:
                users.setdefault(link, set()).add(first)

    def share(links: tuple[str, ...], split: dict[str, int] | None = None) -> float:
        return min([dma] + [topo.capacity[lk] / (len(users[lk]) * (split or {}).get(lk, 1)) for lk in links])

    channel = m.global_bw / tiles  # type: ignore[attr-defined]
    mem = np.array([min(channel, share(reads[t])) for t in range(tiles)])
    slowest = dma
    for routes in partials.values():
        crossing: dict[str, int] = {}
        for links in routes:
            for link in links:
                crossing[link] = crossing.get(link, 0) + 1
        slowest = min([slowest] + [share(links, crossing) for links in routes])
    return mem, np.array([share(links) for links in ring]), slowest


def cost(k: MatmulKernel, fig: Figures, c: dict[str, np.ndarray],
         moved: Callable[[Operand, tuple[np.ndarray, np.ndarray]], np.ndarray]) -> tuple[np.ndarray, ...]:
    """Cycles, scratchpad, global bytes and ct_local bytes of split-ring schedules."""
    m = fig.machine
    sk_i, g_i = c["sk"], c["gn"]
    sk, g = sk_i.astype(np.float64), g_i.astype(np.float64)
    bm, bn, kp = c["bm"].astype(np.float64), c["bn"].astype(np.float64), c["bk"].astype(np.float64)
    ea, eb, ec = k.a.itemsize, k.b.itemsize, k.c.itemsize
    tiles = sk * g
    q = k.K / (sk * g * kp)
    blocks = k.N / g / bn
    moved_a, moved_b = moved(k.a, (bm, kp)), moved(k.b, (kp, bn))
    chunk, b_blk = bm * kp * ea, kp * bn * eb
    compute = bm * bn * kp / fig.mac_rate(k.a.dtype) + fig.matrix_startup
    scatter = scatters(k, c)
    port_sub, mem_rate, part_rate = np.zeros_like(bm), np.zeros_like(bm), np.zeros_like(bm)
    for key in {(int(a), int(b), bool(r)) for a, b, r in zip(sk_i, g_i, scatter, strict=True)}:
        rows = (sk_i == key[0]) & (g_i == key[1]) & (scatter == key[2])
        mem_t, ring_t, slowest = _rates(m, *key)
        per_tile = ((moved_a[rows, None] + g[rows, None] * moved_b[rows, None]) / mem_t
                    + (g[rows, None] - 1) * fig.rounded(chunk[rows])[:, None] / ring_t)
        port_sub[rows] = per_tile.max(axis=1)
        mem_rate[rows] = mem_t.min()
        part_rate[rows] = slowest
    fill = fig.transfer_fixed + (moved_a + moved_b) / mem_rate
    hop = m.dma_setup + m.topology.hop_latency
    ring = np.maximum(fill + q * g * compute, fig.transfer_fixed + q * port_sub + compute) + q * hop
    vrate = fig.vector_rate("f32")
    # reduce-scattered (sk divides M): each tile adds, rounds and stores rows/sk of them
    share = np.where(scatter, sk, 1.0)
    rc = np.array([chunk_rows(int(a) // int(s_), int(b), ec, ROUNDED_CHUNK // int(s_))
                   for a, b, s_ in zip(c["bm"], c["bn"], share, strict=True)], dtype=np.float64)
    chunks = bm / share / rc  # chunks of rc rows a tile receives, adds and stores, per block
    # per chunk of rc rows: receive the other partials' chunks (one receive), add them, round, store
    combine = (chunks * (m.dma_setup + m.topology.hop_latency * (sk - 1)) + bm / share * bn * 4 / part_rate
               + (sk - 1) * chunks * (rc * bn / vrate + fig.vector_startup))
    rounding = chunks * (rc * bn / vrate + fig.vector_startup)
    store = chunks * fig.transfer_fixed + bm / share * bn * ec / mem_rate
    cycles = blocks * (ring + combine + rounding + store)
    # the larger of two phases, as the timeline holds them (each op owns the buffers its program
    # order holds at once, `ktir.targets.timeline`). The ring: the accumulator, the zero chunk the
    # reduces start from and the ring's chunks and B blocks (`space_ring.ring_buffers`). The combine:
    # the accumulator, the zero chunk, per split whose chunk the tile adds (one, or sk when
    # scattered) the chunks extracted in the buffers their op owns (`BUFFERS`; each held until the
    # receivers have read it) and the chunk received and summed, and a rounded chunk
    acc = bm * bn * 4
    ring_phase = acc + ring_buffers(chunk, b_blk, rc * bn * 4) + rc * bn * 4
    combine_phase = acc + (BUFFERS * share + share + 1) * rc * bn * 4 + rc * bn * ec
    scratch = np.maximum(ring_phase, combine_phase)
    gbytes = tiles * blocks * q * (moved_a + g * moved_b) + k.M * k.N * ec
    local = gbytes + tiles * blocks * q * (g - 1) * chunk + (sk - 1) * k.M * k.N * 4
    return cycles, scratch, gbytes, local
