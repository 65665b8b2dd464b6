"""The kinds of generated kernels: what a natural kernel computes, at random sizes and in random forms.

Each kind is a function `kind(g: Gen) -> None` that loads whole inputs, computes and stores
whole results on `g` (the row loop, the scan and the gather read and write through the
access tiles their construct needs). Sizes mix stick-aligned values with odd ones (1, 3, 63,
65, 97, 127, 129...), so that blocks which do not divide evenly are exercised.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ktir.builder import Value, box, ind, ssa
from ktir.ir import attributes as at
from ktir.ir import types as ty

from . import ops
from .ir import INDEX, NUMPY, TINY, UNIT, Dim, Gen, Output, T, amap, gamma, ktype, tensor_type

LARGE = (64, 65, 96, 97, 127, 128, 129, 192, 256)  # a parallel dimension of 64 or more
SMALL = (1, 2, 3, 4, 5, 7, 8, 16, 31, 32, 33, 48)
ELEMENTS = 1 << 15  # per tensor: the interpreter runs thousands of these


def size(g: Gen, large: float = 0.5) -> int:
    return int(g.choice(LARGE if g.chance(large) else SMALL))


def shape(g: Gen, rank: int, budget: int = ELEMENTS, large: float = 0.5) -> list[int]:
    out = [size(g, large) for _ in range(rank)]
    while math.prod(out) > budget:
        i = max(range(rank), key=lambda j: out[j])
        out[i] = max(1, out[i] // 2 + (1 if g.chance(0.5) else 0))
    return out


def dtype(g: Gen) -> str:
    return str(g.choice(["f32", "f32", "f16", "bf16"]))


def subset(g: Gen, n: int, proper: bool = True) -> list[int]:
    """A random non-empty subset of range(n), sorted; proper (not all of it) when asked and n > 1."""
    while True:
        picked = [i for i in range(n) if g.chance(0.5)]
        if picked and not (proper and n > 1 and len(picked) == n):
            return picked


def finish(g: Gen, t: T, hint: str = "y") -> str:
    """Store `t`, rounded to a random output type half of the time."""
    if g.chance(0.5):
        t = g.cast(t, dtype(g))
    return g.store(t, hint)


# ---------------------------------------------------------------------- elementwise chains


def _step(g: Gen, cur: T, seen: list[T]) -> T:
    """One elementwise step on `cur`: a unary op, a binary op with a new input (same shape or
    broadcast from fewer dimensions), with an earlier value or a constant, or a safe division."""
    n = len(cur.shape)
    what = g.choice(["unary", "same", "broadcast", "broadcast", "earlier", "scalar", "divide"])
    if what == "unary":
        op = g.choice(["negf", "absf", "tanh"] + (["exp"] if cur.mag + cur.err <= 4 else []))
        return ops.unary(g, op, cur)
    if what in ("same", "broadcast", "divide") or (what == "earlier" and len(seen) < 2):
        if what == "broadcast" and n > 1:
            positions = subset(g, n)
            if g.chance(0.3) and len(positions) > 1:
                positions = positions[::-1]  # broadcast through a transposing map
            w = g.input([cur.shape[p] for p in positions], cur.dtype, dims=[cur.dims[p] for p in positions], hint="w")
            g.features.add("broadcast")
        else:
            positions = list(range(n))
            w = g.input(cur.shape, cur.dtype, dims=cur.dims, hint="w")
        if what == "divide":
            return ops.binary(g, "divf", cur, ops.positive_denominator(g, w), positions)
        op = g.choice(["addf", "subf", "mulf", "maximumf", "minimumf"])
        return ops.binary(g, op, cur, w, positions)
    if what == "earlier":
        other = g.choice([s for s in seen if s is not cur and s.shape == cur.shape and s.dtype == cur.dtype] or [cur])
        return ops.binary(g, g.choice(["addf", "subf", "mulf", "maximumf"]), cur, other)
    c = g.choice([0.5, 2.0, -1.5, 0.0, 3.0])
    return ops.with_scalar(g, g.choice(["addf", "mulf", "maximumf", "minimumf", "subf"]), cur, c)


def elementwise(g: Gen) -> None:
    """A chain of one to five elementwise ops on a loaded tensor, with broadcast operands."""
    dt = dtype(g)
    x = g.input(shape(g, g.choice([1, 2, 2, 3])), dt)
    if dt != "f32" and g.chance(0.6):
        x = g.cast(x, "f32")
    seen = [x]
    for _ in range(g.rng.randint(1, 5)):
        seen.append(_step(g, seen[-1], seen))
    if g.chance(0.2):
        g.features.add("stores an intermediate")
        g.store(seen[len(seen) // 2], "mid")
    finish(g, seen[-1])
    # drawn last, so the kernels without it are those of the earlier version of this kind
    if g.chance(0.2):
        # the input array updated in place, after everything above read it: x = 2 x + c
        g.features.add("updates its input in place")
        upd = ops.with_scalar(g, "addf", ops.with_scalar(g, "mulf", x, 2.0), g.choice([0.0, 1.0]))
        g.store_into(g.cast(upd, dt), "x")


# ---------------------------------------------------------------------- reductions


def _reduction(g: Gen, x: T, axes: Sequence[int] | None = None, combiner: str | None = None) -> T:
    """A reduction of f32 `x` over random (or given) axes, its init from a random source."""
    n = len(x.shape)
    axes = list(axes) if axes is not None else subset(g, n, proper=False)
    combiner = combiner or g.choice(["addf", "addf", "maximumf", "minimumf"])
    kept = [i for i in range(n) if i not in axes]
    out_shape = [x.shape[i] for i in kept] or [1]
    out_dims = [x.dims[i] for i in kept] or [g.dim(1)]
    source = g.choice(ops.INIT_SOURCES)
    init = ops.init_tensor(g, source, out_shape, out_dims, combiner)
    g.features.add("reduce all" if not kept else f"reduce {len(axes)} of {n}")
    return ops.reduce(g, x, axes, combiner, init)


def reduction(g: Gen) -> None:
    """A reduction over any axes, from every init source, often followed by a normalisation that
    broadcasts the result back over the reduced axes."""
    dt = dtype(g)
    x = g.input(shape(g, g.choice([1, 2, 2, 3])), dt)
    x = g.cast(x, "f32")
    if g.chance(0.4):
        x = _step(g, x, [x])
    n = len(x.shape)
    axes = subset(g, n, proper=False)
    r = _reduction(g, x, axes)
    kept = [i for i in range(n) if i not in axes]
    if kept and g.chance(0.6):
        g.features.add("normalise")
        if g.chance(0.5):
            y = ops.binary(g, "subf", x, r, kept)
        else:
            y = ops.binary(g, "divf", x, ops.positive_denominator(g, r), kept)
        if g.chance(0.5):
            g.store(r, "stat")
        finish(g, y)
    else:
        finish(g, r)
    # drawn last, so the kernels without it are those of the earlier version of this kind
    if g.chance(0.25):
        # a second pass over the same elements whose init is the first pass's result (another
        # op reducing the same dimensions): a split reduction must apply that init exactly once
        g.features.add("init:the result of a reduction over the same dimensions")
        combiner = g.choice(["addf", "maximumf", "minimumf"])
        finish(g, ops.reduce(g, x, axes, combiner, r), "r2")


# ---------------------------------------------------------------------- several results


def multi_output(g: Gen) -> None:
    """Two or three results of different shapes from one input: an elementwise result, reductions
    over different axes, a transpose, a normalisation storing its statistics (a LayerNorm that
    also stores its mean and rstd); sometimes one more result computed from an input of its own."""
    rank = g.choice([2, 2, 3])
    x = g.cast(g.input(shape(g, rank), dtype(g)), "f32")
    heads = ["reduce", g.choice(["reduce", "elementwise", "transpose", "normalise"])]
    if g.chance(0.5):
        heads.append(g.choice(["elementwise", "transpose", "reduce"]))
    g.features.add(f"{len(heads)} results")
    for head in heads:
        if head == "reduce":
            finish(g, _reduction(g, x), "r")
        elif head == "elementwise":
            finish(g, _step(g, x, [x]), "e")
        elif head == "transpose":
            perm = list(range(rank))
            while perm == list(range(rank)):
                g.rng.shuffle(perm)
            finish(g, ops.transpose(g, x, perm), "t")
        else:
            axes = [rank - 1]
            mean = ops.with_scalar(g, "mulf", _reduction(g, x, axes, "addf"), 1.0 / x.shape[-1])
            g.store(mean, "mean")
            finish(g, ops.binary(g, "subf", x, mean, list(range(rank - 1))), "centred")
    # drawn last, so the kernels without it are those of the first version of this kind
    if g.chance(0.3):
        g.features.add("an independent result")  # its own input and shape: nothing ties it to x
        z = g.cast(g.input(shape(g, g.choice([1, 2]), large=0.3), dtype(g), hint="z"), "f32")
        finish(g, _step(g, z, [z]), "i")


# ---------------------------------------------------------------------- permutations


def permute(g: Gen) -> None:
    """A transpose of odd sizes (rank 2 or 3, any non-identity permutation), maybe combined with
    a second input laid out like the result."""
    rank = g.choice([2, 2, 3])
    shp = shape(g, rank)
    shp[g.rng.randrange(rank)] = g.choice([3, 7, 33, 63, 65, 97, 127, 129])
    while math.prod(shp) > 1 << 15:
        i = max(range(rank), key=lambda j: shp[j])
        shp[i] = shp[i] // 2 + 1
    x = g.input(shp, dtype(g))
    perm = list(range(rank))
    while perm == list(range(rank)):
        g.rng.shuffle(perm)
    g.features.add("odd sizes" if any(s % 2 for s in shp) else "even sizes")
    t = ops.transpose(g, x, perm)
    if g.chance(0.5):
        t = g.cast(t, "f32")
        t = _step(g, t, [t])
    finish(g, t)


# ---------------------------------------------------------------------- matmuls


def _layout(g: Gen, labels: str, batch: bool) -> str:
    """A random order of `labels` (two letters), with the batch label somewhere when `batch`."""
    order = labels if g.chance(0.5) else labels[::-1]
    if batch:
        at_ = g.choice([0, 0, 1, 2])
        order = order[:at_] + "b" + order[at_:]
    return order


def matmul(g: Gen) -> None:
    """A matmul with either operand transposed (or both), batch dims, an f32 or f16 accumulator,
    an init from any source (zero, a bias loaded as the init...), and an epilogue."""
    batch = g.chance(0.35)
    dt = dtype(g)
    B = g.choice([2, 3, 4, 8]) if batch else 1
    M, N = size(g, 0.6), size(g, 0.6)
    K = g.choice([16, 32, 33, 48, 64, 96, 128])
    while B * M * N * K > 1 << 20 or max(B * M * K, B * K * N, B * M * N) > 1 << 15:
        M, N = max(1, M // 2), max(1, N // 2)
    a_labels, b_labels = _layout(g, "mk", batch), _layout(g, "kn", batch)
    dims = {"b": g.dim(B), "m": g.dim(M), "k": g.dim(K), "n": g.dim(N)}
    sizes = {"b": B, "m": M, "k": K, "n": N}
    a = g.input([sizes[c] for c in a_labels], dt, dims=[dims[c] for c in a_labels], hint="a")
    b = g.input([sizes[c] for c in b_labels], dt, dims=[dims[c] for c in b_labels], hint="b")
    g.features.add(f"A {a_labels}, B {b_labels}")
    if a_labels.replace("b", "") == "km":
        g.features.add("A transposed")
    if b_labels.replace("b", "") == "nk":
        g.features.add("B transposed")
    if batch:
        g.features.add("batch")
    if g.chance(0.15) and not batch and a_labels == "km":
        a = ops.transpose(g, a, [1, 0])  # transposed by an op, then a plain matmul
        a_labels = "mk"
    acc = "f16" if dt == "f16" and g.chance(0.25) else "f32"
    if acc == "f16":
        g.features.add("f16 accumulator")
    out_labels = ("b" if batch else "") + "mn"
    out_shape, out_dims = [sizes[c] for c in out_labels], [dims[c] for c in out_labels]
    source = g.choice(["fill", "fill", "fill", "constant", "splat", "loaded"])
    if source == "loaded":
        g.features.add("init:loaded (bias as the init)")
        init = g.input(out_shape, acc, dims=out_dims, hint="bias")
    else:
        zero = g.chance(0.7)
        value = 0.0 if zero else g.choice([1.0, -0.5])
        g.features.add(f"init:{source}:{'identity' if zero else 'other'}")
        init = T(g.splat_value(value, out_shape, acc, source), np.full(out_shape, value), tuple(out_dims), acc)
    c = ops.contract(g, a, b, a_labels, b_labels, init, named=g.chance(0.6))
    if g.chance(0.5):
        g.features.add("epilogue")
        c = g.cast(c, "f32")
        if g.chance(0.5):
            bias = g.input([N], "f32", dims=[dims["n"]], hint="bias")
            c = ops.binary(g, "addf", c, bias, [len(out_labels) - 1])
        if g.chance(0.5):
            c = ops.with_scalar(g, "maximumf", c, 0.0) if g.chance(0.5) else ops.unary(g, "tanh", c)
    finish(g, c if g.chance(0.5) else g.cast(c, dt))
    # drawn last, so the kernels without it are those of the earlier version of this kind
    if g.chance(0.25):
        # a second product consuming the first: the first's parallel n is the second's reduced k
        g.features.add("two products in a chain")
        P = g.choice([1, 16, 33, 64, 97])
        while B * M * N * P > 1 << 20 or B * max(N * P, M * P) > 1 << 15:
            P = max(1, P // 2)
        c32 = g.cast(c, "f32")
        w_labels = ("b" if batch else "") + "kn"
        wdims = {"b": dims["b"], "k": c32.dims[-1], "n": g.dim(P)}
        wsizes = {"b": B, "k": N, "n": P}
        w = g.input([wsizes[ch] for ch in w_labels], "f32", dims=[wdims[ch] for ch in w_labels], hint="w2")
        init2 = ops.init_tensor(g, g.choice(["fill", "constant", "loaded"]), [*out_shape[:-1], P],
                                [*out_dims[:-1], wdims["n"]], "addf", identity=g.chance(0.7))
        a2_labels = ("b" if batch else "") + "mk"
        finish(g, ops.contract(g, c32, w, a2_labels, w_labels, init2, named=g.chance(0.6)), "d")


# ---------------------------------------------------------------------- loops


def _block_tile(g: Gen, view: Value, row: Value, shp: Sequence[int]) -> Value:
    return g.b.access_tile(view, [ssa(row), *([g.c0] * (len(shp) - 1))], box(*shp), list(shp))


def _row_index(g: Gen, row: Value, shp: Sequence[int]) -> Value:
    """A [B, C] f32 tensor holding the row number (row + i) of each element: the loop index as data."""
    f32 = ktype("f32")
    if shp[0] == 1 and g.chance(0.5):
        i64 = g.b.create("arith.index_cast", [row], [ty.I64])[0]
        scalar = g.b.create("arith.sitofp", [i64], [f32])[0]
        if g.chance(0.5):
            g.features.add("index as data:splat")
            return g.b.create("tensor.splat", [scalar], [tensor_type(shp, "f32")])[0]
        g.features.add("index as data:fill")
        return g.b.fill(scalar, g.empty(shp, "f32"))
    g.features.add("index as data:linalg.index")
    n = len(shp)

    def body(a: tuple[Value, ...]) -> list[Value]:
        i = g.b.create("linalg.index", [], [INDEX], {"dim": at.IntegerAttr(value=0, type=ty.I64)})[0]
        r = g.b.create("arith.addi", [row, i], [INDEX])[0]
        return [g.b.create("arith.sitofp", [g.b.create("arith.index_cast", [r], [ty.I64])[0]], [f32])[0]]

    (v,) = g.generic([], [g.empty(shp, "f32")], [amap(n, range(n))], ["parallel"] * n, body)
    return v


def _loop_bounds(g: Gen, rows: int, step: int) -> tuple[Value, Value, Value]:
    """(first, bound, step) of a row loop: from 0, or in the tile-id form `tid * B` of the guide."""
    bound, stepv = g.b.index(rows), g.b.index(step)
    if g.chance(0.5):
        g.features.add("loop from tile id")
        (tid,) = g.b.tile_id()
        first = g.b.create("arith.muli", [tid, stepv], [INDEX])[0]
        return first, bound, stepv
    return g.c0, bound, stepv


def row_loop(g: Gen) -> None:
    """`scf.for` over blocks of rows whose body uses the row number as data:
    y[r, :] = x[r, :] * r (+ c, or a per-row statistic of x, or a resident weight)."""
    R = size(g, 0.7)
    C = size(g, 0.5)
    while R * C > 1 << 15:
        C = max(1, C // 2)
    step = 1 if g.chance(0.6) else g.choice([d for d in (2, 4, 8, 16, 32) if R % d == 0] or [1])
    dt = dtype(g)
    rdim, cdim = g.dim(R), g.dim(C)
    x = g.data([R, C], dt)
    xa, ya = g.arg("x"), g.arg("y")
    g.inputs[xa.name[1:]] = x
    variant = g.choice(["scale", "offset", "rowmax", "weight"])
    g.features.add(f"row loop:{variant}")
    g.features.add("one row per step" if step == 1 else "several rows per step")
    w = None
    if variant == "weight":
        w = g.input([C], "f32", dims=[cdim], hint="w")  # loaded before the loop: resident
    out_dt = dtype(g)
    g.inputs[ya.name[1:]] = np.full((R, C), np.nan, NUMPY[out_dt])
    xv, yv = g.view(xa, [R, C], dt), g.view(ya, [R, C], out_dt)
    first, bound, stepv = _loop_bounds(g, R, step)
    blk = [step, C]
    with g.b.for_(first, bound, stepv) as (r,):
        xb = g.b.load(_block_tile(g, xv, r, blk), ktype(dt))
        if dt != "f32":
            xb = g.b.create("arith.extf", [xb], [tensor_type(blk, "f32")])[0]
        idx = _row_index(g, r, blk)
        if variant == "scale":
            y = g.b.create("arith.mulf", [xb, idx])[0]
        elif variant == "offset":
            y = g.b.create("arith.addf", [xb, idx])[0]
        elif variant == "rowmax":
            init = g.splat_value(-math.inf, [step], "f32", g.choice(["constant", "splat", "fill"]))
            mx = g.b.reduce("arith.maximumf", [xb], [init], [1])
            (y,) = g.generic([xb, mx, idx], [g.empty(blk, "f32")], [amap(2, [0, 1]), amap(2, [0]), amap(2, [0, 1]),
                                                                     amap(2, [0, 1])], ["parallel"] * 2,
                             lambda a: [g.b.create("arith.mulf", [g.b.create("arith.subf", [a[0], a[1]])[0], a[2]])[0]])
        else:
            assert w is not None
            (y,) = g.generic([xb, w.v, idx], [g.empty(blk, "f32")], [amap(2, [0, 1]), amap(2, [1]), amap(2, [0, 1]),
                                                                     amap(2, [0, 1])], ["parallel"] * 2,
                             lambda a: [g.b.create("arith.mulf", [g.b.create("arith.mulf", [a[0], a[1]])[0], a[2]])[0]])
        if out_dt != "f32":
            y = g.b.create("arith.truncf", [y], [tensor_type(blk, out_dt)])[0]
        g.b.store(y, _block_tile(g, yv, r, blk))
    xd = x.astype(np.float64)
    rows = np.arange(R, dtype=np.float64)[:, None]
    u = UNIT["f32"]
    if variant == "scale":
        want = xd * rows
        err = u * float(np.max(np.abs(want)))
    elif variant == "offset":
        want = xd + rows
        err = u * float(np.max(np.abs(want)))
    elif variant == "rowmax":
        want = (xd - xd.max(axis=1, keepdims=True)) * rows
        err = u * (2 + R) * float(np.max(np.abs(xd))) * 2 + u * float(np.max(np.abs(want)))
    else:
        assert w is not None
        want = xd * w.data[None, :] * rows
        err = 2 * u * float(np.max(np.abs(want)))
    if out_dt != "f32":
        err += UNIT[out_dt] * (float(np.max(np.abs(want))) + err)
    g.outputs[ya.name[1:]] = Output(out_dt, want, 2 * err + TINY)
    assert rdim.why is None and cdim.why is None  # every row is independent: both dimensions stay parallel


def _memory_scan(g: Gen) -> None:
    """A scan whose state is carried through memory, not iter_args: y[0] = x[0] before the loop,
    then for r in 1..R: y[r] = d * y[r - 1] + x[r] (or max), reading the row the previous
    iteration stored. Rows depend on each other through y; the columns stay independent."""
    R = size(g, 0.6)
    C = size(g, 0.5)
    while R * C > 1 << 15:
        C = max(1, C // 2)
    rdim = g.dim(R)
    g.dim(C)
    rdim.mark("carried by the loop through memory")
    dt = dtype(g)
    x = g.data([R, C], dt)
    xa, ya = g.arg("x"), g.arg("y")
    g.inputs[xa.name[1:]] = x
    g.inputs[ya.name[1:]] = np.full((R, C), np.nan, np.float32)
    combine = g.choice(["sum", "decay", "max"])
    decay = {"sum": 1.0, "decay": g.choice([0.5, 0.9]), "max": 1.0}[combine]
    g.features.add(f"scan through memory:{combine}")
    blk = [1, C]
    xv, yv = g.view(xa, [R, C], dt), g.view(ya, [R, C], "f32")

    def row_of_x(r: Value) -> Value:
        xb = g.b.load(_block_tile(g, xv, r, blk), ktype(dt))
        return xb if dt == "f32" else g.b.create("arith.extf", [xb], [tensor_type(blk, "f32")])[0]

    g.b.store(row_of_x(g.c0), _block_tile(g, yv, g.c0, blk))
    one = g.b.index(1)
    with g.b.for_(one, g.b.index(R), one) as (r,):
        prev_row = g.b.create("arith.subi", [r, one], [INDEX])[0]
        prev = g.b.load(_block_tile(g, yv, prev_row, blk), ktype("f32"))
        xb = row_of_x(r)
        if combine == "max":
            nxt = g.b.create("arith.maximumf", [prev, xb])[0]
        else:
            if combine == "decay":
                prev = g.b.create("arith.mulf", [prev, g.splat_value(decay, blk, "f32", g.choice(["constant", "splat",
                                                                                                   "fill"]))])[0]
            nxt = g.b.create("arith.addf", [prev, xb])[0]
        g.b.store(nxt, _block_tile(g, yv, r, blk))
    xd = x.astype(np.float64)
    want, spread = np.empty((R, C)), np.empty((R, C))
    want[0], spread[0] = xd[0], np.abs(xd[0])
    for i in range(1, R):
        want[i] = np.maximum(want[i - 1], xd[i]) if combine == "max" else want[i - 1] * decay + xd[i]
        spread[i] = spread[i - 1] * decay + np.abs(xd[i])
    err = 0.0 if combine == "max" else gamma(2 * R + 1, UNIT["f32"]) * float(np.max(spread))
    g.outputs[ya.name[1:]] = Output("f32", want, 2 * err + TINY)


def scan(g: Gen) -> None:
    """`scf.for` over rows carrying state in iter_args: y[r] = s_r with s_r = d * s_{r-1} + x[r]
    (a cumulative or decayed sum) or s_r = max(s_{r-1}, x[r]); the final state may be stored too.
    A third of the scans carry it through memory instead (`_memory_scan`)."""
    if g.chance(1 / 3):
        _memory_scan(g)
        return
    R = size(g, 0.6)
    C = size(g, 0.5)
    while R * C > 1 << 15:
        C = max(1, C // 2)
    rdim, cdim = g.dim(R), g.dim(C)
    rdim.mark("carried by the loop")
    dt = dtype(g)
    x = g.data([R, C], dt)
    xa = g.arg("x")
    g.inputs[xa.name[1:]] = x
    combine = g.choice(["sum", "decay", "max"])
    decay = {"sum": 1.0, "decay": g.choice([0.5, 0.9]), "max": 1.0}[combine]
    g.features.add(f"scan:{combine}")
    source = g.choice(["fill", "loaded", "constant", "splat"])
    g.features.add(f"scan init:{source}")
    blk = [1, C]
    if source == "loaded":
        init = g.input(blk, "f32", dims=[g.dim(1), cdim], hint="s0")
        init_data = init.data
        init_v = init.v
    else:
        value = g.choice([0.0, 1.0, -0.5]) if combine != "max" else g.choice([-math.inf, 0.0])
        init_v = g.splat_value(value, blk, "f32", source)
        init_data = np.full(blk, value)
    ya = g.arg("y")
    g.inputs[ya.name[1:]] = np.full((R, C), np.nan, np.float32)
    xv, yv = g.view(xa, [R, C], dt), g.view(ya, [R, C], "f32")
    with g.b.for_(g.c0, g.b.index(R), g.b.index(1), [init_v]) as (r, state):
        xb = g.b.load(_block_tile(g, xv, r, blk), ktype(dt))
        if dt != "f32":
            xb = g.b.create("arith.extf", [xb], [tensor_type(blk, "f32")])[0]
        if combine == "max":
            nxt = g.b.create("arith.maximumf", [state, xb])[0]
        elif combine == "decay":
            d = g.splat_value(decay, blk, "f32", g.choice(["constant", "splat", "fill"]))
            nxt = g.b.create("arith.addf", [g.b.create("arith.mulf", [state, d])[0], xb])[0]
        else:
            nxt = g.b.create("arith.addf", [state, xb])[0]
        g.b.store(nxt, _block_tile(g, yv, r, blk))
        g.b.yield_(nxt)
    final = g.b.last_results[0]
    xd = x.astype(np.float64)
    want = np.empty((R, C))
    spread = np.empty((R, C))
    s, a = init_data[0].copy(), np.abs(init_data[0])
    for i in range(R):
        s = np.maximum(s, xd[i]) if combine == "max" else s * decay + xd[i]
        a = a * decay + np.abs(xd[i])
        want[i], spread[i] = s, a
    err = 0.0 if combine == "max" else gamma(2 * R + 1, UNIT["f32"]) * float(np.max(spread))
    g.outputs[ya.name[1:]] = Output("f32", want, 2 * err + TINY)
    if g.chance(0.4):
        g.features.add("stores the final state")
        za = g.arg("last")
        g.inputs[za.name[1:]] = np.full(blk, np.nan, np.float32)
        g.b.store(Value(final.name, final.type), g.whole(g.view(za, blk, "f32"), blk))
        g.outputs[za.name[1:]] = Output("f32", want[-1:].copy(), 2 * err + TINY)


# ---------------------------------------------------------------------- gathers


def _indirect_tile(g: Gen, table: Value, ids: Value, shp: Sequence[int], axis: int) -> Value:
    """Elements (m, k) of the box `shp`: table[ids[m], k] (axis 0) or table[m, ids[k]] (axis 1)."""
    start = ssa(g.c0)  # captured: the lookups start at element 0 of the index vector
    return g.b.indirect_access_tile(
        table, shp, lambda m, k: [ind(ids, start + ssa(m)), k] if axis == 0 else [m, ind(ids, start + ssa(k))])


def gather(g: Gen) -> None:
    """Rows (or columns) of a table picked by a loaded index vector through an indirect access
    tile (an embedding lookup), maybe scaled by a per-lookup weight, maybe post-processed."""
    axis = 0 if g.chance(0.7) else 1
    V = g.choice([3, 17, 64, 100, 129, 256])
    L = size(g, 0.6)  # lookups
    C = size(g, 0.5)  # the other dimension
    while max(V, L) * C > 1 << 15:
        C = max(1, C // 2)
    dt = dtype(g)
    tshape = [V, C] if axis == 0 else [C, V]
    table = g.data(tshape, dt)
    ids = g.np.integers(0, V, size=L).astype(np.int32)
    ta, ia = g.arg("table"), g.arg("ids")
    g.inputs[ta.name[1:]] = table
    g.inputs[ia.name[1:]] = ids
    tv = g.view(ta, tshape, dt)
    iv = g.view(ia, [L], "i32")
    oshape = [L, C] if axis == 0 else [C, L]
    lookups, other = g.dim(L), g.dim(C)
    g.dim(V).mark("read through the index vector")
    g.features.add(f"gather {'rows' if axis == 0 else 'columns'}")
    v = g.b.load(_indirect_tile(g, tv, iv, oshape, axis), ktype(dt))
    td = table.astype(np.float64)
    data = td[ids, :] if axis == 0 else td[:, ids]
    t = T(v, data, (lookups, other) if axis == 0 else (other, lookups), dt)
    if g.chance(0.5):
        t = g.cast(t, "f32")
        wt = g.input([L], "f32", dims=[lookups], hint="scale")
        t = ops.binary(g, "mulf", t, wt, [axis])
        g.features.add("scaled per lookup")
    if g.chance(0.3):
        t = _step(g, t, [t])
    finish(g, t)
    # drawn last, so the kernels without it are those of the earlier version of this kind
    if g.chance(0.3):
        g.features.add("gathered rows reduced (an embedding bag)")
        bag = g.cast(t, "f32")
        over = [g.choice([0, 1])]  # the lookups, or the other dimension
        finish(g, _reduction(g, bag, over), "bag")


KINDS: dict[str, Callable[[Gen], None]] = {
    "elementwise": elementwise,
    "reduction": reduction,
    "multi_output": multi_output,
    "permute": permute,
    "matmul": matmul,
    "row_loop": row_loop,
    "scan": scan,
    "gather": gather,
}

__all__ = ["KINDS", "Dim"]
