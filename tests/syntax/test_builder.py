"""The builder API makes valid modules whose printed text parses back to the same AST."""

from __future__ import annotations

import pytest

import ktir
from ktir.builder import Builder, BuildError, ssa
from ktir.dialects.names import Memref
from ktir.dialects.registry import OPS
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.verify import verify


def _box(*extents: int) -> af.IntegerSet:
    cons = []
    for i, n in enumerate(extents):
        cons += [af.constraint(af.dim(i), ">=", af.const(0)), af.constraint(af.dim(i), "<=", af.const(n - 1))]
    return af.IntegerSet(num_dims=len(extents), num_symbols=0, constraints=tuple(cons))


def build_scale_kernel() -> ktir.Module:
    b = Builder()
    with b.func("scale", [("x", ty.INDEX), ("y", ty.INDEX)], grid=[4]):
        x, y = (ktir.builder.Value("%x", ty.INDEX), ktir.builder.Value("%y", ty.INDEX))
        (tid,) = b.tile_id()
        c0 = b.constant(0, ty.INDEX)
        vx = b.memory_view(x, [32, 64], [64, 1], ty.F16, coordinate_set=_box(32, 64))
        vy = b.memory_view(y, [32, 64], [64, 1], ty.F16, coordinate_set=_box(32, 64))
        tx = b.access_tile(vx, [ssa(tid) * 8, c0], _box(8, 64), [8, 64])
        ty_ = b.access_tile(vy, [ssa(tid) * 8, c0], _box(8, 64), [8, 64])
        data = b.load(tx, ty.F16)
        doubled = b.arith.addf(data, data)
        negative = b.arith.cmpf(doubled, data, predicate=at.IntegerAttr(value=4, type=ty.I64))
        out = b.arith.select(negative, data, doubled)
        one, four = b.constant(1, ty.INDEX), b.constant(4, ty.INDEX)
        with b.for_(c0, four, one):
            b.math.exp(out)
        b.store(out, ty_)
        b.func_return()
    return b.module


def test_built_module_round_trips_and_validates() -> None:
    module = build_scale_kernel()
    text = ktir.print_module(module)
    again = ktir.parse(text)
    assert ktir.print_module(again) == text
    assert [d for d in verify(again) if d.severity == "error"] == []
    assert "%2 = ktdp.construct_memory_view %x, sizes: [32, 64], strides: [64, 1]" in text
    assert "ktdp.construct_access_tile %2[%0 * 8, %1]" in text


def test_every_op_has_a_builder_method() -> None:
    b = Builder()
    for name, opdef in OPS.items():
        method = getattr(b.dialect(opdef.dialect), opdef.mnemonic)
        assert method.__doc__ == opdef.summary, name


def test_unknown_op_and_uninferable_results_are_clear_errors() -> None:
    b = Builder()
    with pytest.raises(AttributeError, match="KTIR defines no op arith.frobnicate"):
        _ = b.arith.frobnicate
    with pytest.raises(BuildError, match="cannot infer the result types of arith.extf"):
        b.arith.extf(ktir.builder.Value("%a", ty.F16))
    value = b.arith.extf(ktir.builder.Value("%a", ty.F16), result_types=[ty.F32])
    assert value.type == ty.F32


def build_blocked_sum() -> ktir.Module:
    """Every structured helper once: aliases, a loop with iter_args, linalg bodies, slices,
    reshapes, a comparison, scf.if and an inter-tile reduction."""
    from ktir.builder import box

    b = Builder()
    b.note("built by the test")
    rows = b.alias("rows", box(8, 64))
    blk = b.alias("blk", box(8, 16))
    id2 = b.alias("id2", af.AffineMap.identity(2))
    row = b.alias("row", af.AffineMap(num_dims=2, num_symbols=0, results=(af.dim(0),)))
    d0, s0 = af.dim(0), af.sym(0)
    pair = b.alias("pair", af.IntegerSet(num_dims=1, num_symbols=1, constraints=(
        af.Constraint(expr=d0 - s0 * 2, is_equality=False), af.Constraint(expr=-d0 + s0 * 2 + 1, is_equality=False))))
    first = b.alias("first", af.IntegerSet(num_dims=1, num_symbols=1, constraints=(
        af.Constraint(expr=d0 - s0 * 2, is_equality=True),)))
    one = b.alias("one", box(1))
    vec, blk_t = ty.tensor((8,), ty.F32), ty.tensor((8, 16), ty.F32)
    with b.func("blocked_sum", [("x", ty.INDEX), ("y", ty.INDEX)], grid=[2]) as (x, y):
        (tid,) = b.tile_id(1, ["tid"])
        c0, c16, c64 = b.index(0, "c0"), b.index(16, "c16"), b.index(64, "c64")
        zero = b.constant(at.FloatAttr(value=0.0, type=ty.F32), name="zero")
        vx = b.memory_view(x, [8, 64], [64, 1], ty.F32, coordinate_set=rows, name="vx")
        vy = b.memory_view(y, [8, 1], [1, 1], ty.F32, coordinate_set=box(8, 1), name="vy")
        data = b.load(b.access_tile(vx, [c0, c0], rows, [8, 64], id2, name="tx"), ty.F32, name="data")
        init = b.fill(zero, b.empty(vec, "e"), "init")
        with b.for_(c0, c64, c16, [init], names=["k", "acc"], results=["total"]) as (k, acc):
            part = b.extract_slice(data, [0, k], [8, 16], name="part")
            with b.generic([part], [b.empty(blk_t, "eb")], [id2, id2], ["parallel"] * 2, ["p", "o"], "sq") as (p, _):
                b.yield_(b.arith.mulf(p, p, name="pp"), op="linalg.yield")
            (sq,) = b.last_results
            b.yield_(b.reduce("arith.addf", [sq], [acc], [1], name="sums"))
        (total,) = b.last_results
        assert total.name == "%total"
        with b.produce(pair, ty.TileFutureType(partial_types=(vec,), groups=one), "g", "fut"):
            b.yield_(total, op="ktdp.yield_partial")
        (fut,) = b.last_results
        with b.reduce_tiles(fut, first, [init], ["l", "r"], ["both"]) as (lhs, rhs):
            b.yield_(b.dps("linalg.add", [lhs, rhs], [lhs], name="s"), op="ktdp.yield_reduced")
        (both,) = b.last_results
        with b.if_(b.cmp("arith.cmpi", "eq", tid, c0, name="is0")):
            col = b.expand_shape(both, [[0, 1]], ty.tensor((8, 1), ty.F32), name="col")
            b.store(col, b.access_tile(vy, [c0, c0], box(8, 1), [8, 1], name="ty"))
        b.func_return()
    del blk, row
    return b.module


def test_structured_helpers_round_trip_and_validate() -> None:
    module = build_blocked_sum()
    text = ktir.print_module(module)
    assert text.startswith("// built by the test\n#rows = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0")
    assert "%total = scf.for %k = %c0 to %c64 step %c16 iter_args(%acc = %init)" in text
    assert "%sums = linalg.reduce { arith.addf } ins(%sq" in text
    assert "ktdp.inter_tile_reduce(%fut) consumer_tiles_per_group = #first" in text
    again = ktir.parse(text)
    assert again == module
    assert ktir.print_module(again) == text
    assert [d for d in verify(again) if d.severity == "error"] == []


def test_names_must_match_the_results() -> None:
    b = Builder()
    with pytest.raises(BuildError):
        b.create("arith.addi", [], [ty.INDEX], result_names=["a", "b"])
    b.alias("x", af.AffineMap.identity(1))
    with pytest.raises(BuildError):
        b.alias("x", af.AffineMap.identity(1))


def test_located_gives_the_positions_the_printed_text_has() -> None:
    """Every op gets the line and column where the printer writes it; ops the text leaves
    implicit (elided terminators, short reduce bodies) get none, as the parser gives them."""
    from ktir.builder import located

    module = located(build_blocked_sum(), "sum.ktir")
    again = ktir.parse(ktir.print_module(module), "sum.ktir")
    pairs = list(zip(module.walk(), again.walk(), strict=True))
    assert all(a.loc == b.loc for a, b in pairs)
    assert sum(a.loc is None for a, _ in pairs) >= 3  # the reduce body's two ops, the loop-less yield


def test_located_matches_the_parser_on_the_examples() -> None:
    """On every example (generic forms, multi-result ops and builtin.module included), the
    positions `located` derives from the printed lines are the parser's positions."""
    from pathlib import Path

    from ktir.builder import located

    files = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.ktir"))
    assert files
    for path in files:
        module = ktir.parse(path.read_text(), str(path))
        again = ktir.parse(ktir.print_module(module), str(path))
        located(module, str(path))
        for a, b in zip(module.walk(), again.walk(), strict=True):
            assert a.loc == b.loc, (path.name, a.name, a.results)


def test_segment_sizes_follow_the_declared_operand_names() -> None:
    """Segment sizes are given by operand name and laid out in the definition's order; a name
    the op does not declare (or a missing one) is a BuildError, not a silently wrong attribute."""
    from ktir.builder import _named_segments

    seg = _named_segments("ktdp.construct_access_tile", symbol_operands=0, indices=2, base=1)
    assert seg.values == (1, 2, 0)
    with pytest.raises(BuildError, match="declares operands base, indices, symbol_operands"):
        _named_segments("ktdp.construct_access_tile", base=1, indices=2)


def test_inferred_linalg_results_are_the_destination_group() -> None:
    b = Builder()
    x, y = ktir.builder.Value("%x", ty.tensor((4,), ty.F32)), ktir.builder.Value("%y", ty.tensor((4,), ty.F16))
    seg = at.DenseArrayAttr(element_type=ty.I32, values=(1, 1))
    assert b.create("linalg.exp", [x, y], attributes={"operandSegmentSizes": seg})[0].type == y.type
    bad = at.DenseArrayAttr(element_type=ty.I32, values=(1, 2))
    with pytest.raises(BuildError, match="cannot infer the result types of linalg.exp"):
        b.create("linalg.exp", [x, y], attributes={"operandSegmentSizes": bad})


def _parses_verifies_and_picks(text: str, module: ktir.Module) -> None:
    """`text` (the printed `module`, a kernel @pick(n, out) writing 2.0 to out[0:4] when n > 4,
    else 1.0) parses back to the same module, verifies, and runs either branch."""
    import numpy as np

    import reference_interp as ri

    again = ktir.parse(text)
    assert again == module
    assert not [d for d in verify(again) if d.severity == "error"]
    for n, want in ((9, 2.0), (1, 1.0)):
        got = ri.run(again, None, {"n": n, "out": np.zeros(4, np.float32)}).outputs["out"]
        np.testing.assert_array_equal(got, np.full(4, want, np.float32))


def test_if_values_yields_from_both_branches_and_runs() -> None:
    """`if_values`: an scf.if with results, the then-branch built by the callback, the
    else-branch yielding values at hand; it prints, parses back, verifies and runs."""


    b = Builder()
    with b.func("pick", [("n", ty.INDEX), ("out", ty.INDEX)]) as (n_arg, out_arg):
        c0, c4 = b.index(0, "c0"), b.index(4, "c4")
        one = b.constant(at.FloatAttr(value=1.0, type=ty.F32), name="one")
        two = b.constant(at.FloatAttr(value=2.0, type=ty.F32), name="two")
        vec = ty.tensor((4,), ty.F32)
        ones = b.fill(one, b.empty(vec, "e1"), "ones")
        big = b.cmp("arith.cmpi", "sgt", n_arg, c4, name="big")
        (picked,) = b.if_values(big, lambda: [b.fill(two, b.empty(vec, "e2"), "twos")], [ones], ["picked"])
        view = b.memory_view(out_arg, [4], [1], ty.F32, coordinate_set=_box(4), name="v")
        b.store(picked, b.access_tile(view, [c0], _box(4), [4], name="t"))
        b.func_return()
    text = ktir.print_module(b.module)
    assert "%picked = scf.if %big -> (tensor<4xf32>) {" in text and "} else {" in text
    _parses_verifies_and_picks(text, b.module)


def _gather_kernel(rows: int, cols: int, lookups: int, per_row: int, start: int, two_d: bool) -> ktir.Module:
    """out[m, k] = table[ids[start + m], k] (ids a vector) or table[ids[m // per_row, m % per_row], k]
    (ids a rows x per_row matrix, `two_d`), for m < lookups: an indirect tile built by the builder."""
    from ktir.builder import box, ind

    b = Builder()
    with b.func("gather", [("t", ty.INDEX), ("i", ty.INDEX), ("o", ty.INDEX)]) as (tp, ip, op):
        table = b.memory_view(tp, [rows, cols], [cols, 1], ty.F32, coordinate_set=box(rows, cols))
        n_ids = start + lookups
        shape_ids = [-(-n_ids // per_row), per_row] if two_d else [n_ids]
        ids = b.memory_view(ip, shape_ids, [per_row, 1] if two_d else [1], ty.I32, coordinate_set=box(*shape_ids))
        first = b.index(start)

        def subscripts(m: ktir.builder.Value, k: ktir.builder.Value) -> list:  # type: ignore[type-arg]
            if two_d:
                return [ind(ids, ssa(m).floordiv(per_row), ssa(m).mod(per_row)), k]
            return [ind(ids, ssa(first) + ssa(m)), k]

        tile = b.indirect_access_tile(table, [lookups, cols], subscripts)
        out = b.memory_view(op, [lookups, cols], [cols, 1], ty.F32, coordinate_set=box(lookups, cols))
        b.store(b.load(tile, ty.F32), b.access_tile(out, [0, 0], box(lookups, cols), [lookups, cols]))
        b.func_return()
    return b.module


@pytest.mark.parametrize("two_d", [False, True])
def test_indirect_access_tile_round_trips_validates_and_gathers(two_d: bool) -> None:
    """The builder's gather tile prints as upstream writes it, parses back to the same module,
    verifies, and the interpreter reads the rows numpy's fancy indexing reads."""
    import numpy as np

    import reference_interp as ri

    rows, cols, lookups, per_row, start = 11, 8, 6, 4, 3
    module = _gather_kernel(rows, cols, lookups, per_row, 0 if two_d else start, two_d)
    text = ktir.print_module(module)
    assert "ktdp.construct_indirect_access_tile intermediate_variables(%m" in text
    assert ("ind(%" in text) and ("floordiv 4" in text) == two_d
    again = ktir.parse(text)
    assert again == module
    assert not [d for d in verify(again) if d.severity == "error"]
    rng = np.random.default_rng(7)
    table = rng.standard_normal((rows, cols)).astype(np.float32)
    n_ids = (0 if two_d else start) + lookups
    flat = rng.integers(0, rows, size=-(-n_ids // per_row) * per_row if two_d else n_ids).astype(np.int32)
    ids = flat.reshape(-1, per_row) if two_d else flat
    got = ri.run(again, None, {"t": table, "i": ids, "o": np.zeros((lookups, cols), np.float32)}).outputs["o"]
    want = table[flat[:lookups]] if two_d else table[flat[start:start + lookups]]
    np.testing.assert_array_equal(got, want)


def test_indirect_access_tile_names_its_variables_and_refuses_a_wrong_count() -> None:
    from ktir.builder import box, ind

    b = Builder()
    with b.func("g", [("t", ty.INDEX), ("i", ty.INDEX)]) as (tp, ip):
        table = b.memory_view(tp, [4, 4], [4, 1], ty.F32, coordinate_set=box(4, 4))
        ids = b.memory_view(ip, [4], [1], ty.I32, coordinate_set=box(4))
        b.indirect_access_tile(table, [4, 4], lambda m, k: [ind(ids, m), k], variables=["row", "%col"], name="g0")
        with pytest.raises(BuildError, match="1 variable names for 2 dimensions"):
            b.indirect_access_tile(table, [4, 4], lambda m, k: [ind(ids, m), k], variables=["row"])
        b.func_return()
    assert "%g0 = ktdp.construct_indirect_access_tile intermediate_variables(%row, %col)" in ktir.print_module(b.module)


def test_box_with_a_symbolic_extent_prints_as_mlir_and_bounds_a_dynamic_view() -> None:
    """`box(af.sym(0), 8)`: the coordinate set of a view whose first size is dynamic, written as
    the parser reads it; an extent naming a dim is refused."""
    from ktir.builder import box

    iset = box(af.sym(0), 8)
    assert iset.num_symbols == 1
    b = Builder()
    with b.func("f", [("p", ty.INDEX), ("n", ty.INDEX)]) as (p, n):
        b.memory_view(p, [n, 8], [8, 1], ty.F32, coordinate_set=b.alias("rows", iset))
        b.func_return()
    text = ktir.print_module(b.module)
    assert "#rows = affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0, d1 >= 0, -d1 + 7 >= 0)>" in text
    assert ktir.parse(text) == b.module
    assert not [d for d in verify(b.module) if d.severity == "error"]
    with pytest.raises(BuildError, match="box extent 0 is not a linear expression of symbols"):
        box(af.dim(0) + 1, 8)


def test_if_else_builds_both_branches_and_runs() -> None:
    """`if_else`: an scf.if without results whose branches each store; it prints, parses back,
    verifies and runs the branch the condition picks."""

    from ktir.builder import box
    from ktir.dialects.names import Arith

    b = Builder()
    with b.func("pick", [("n", ty.INDEX), ("out", ty.INDEX)]) as (n_arg, out_arg):
        c0, c4 = b.index(0, "c0"), b.index(4, "c4")
        view = b.memory_view(out_arg, [4], [1], ty.F32, coordinate_set=box(4), name="v")
        tile = b.access_tile(view, [c0], box(4), [4], name="t")

        def fill(value: float, name: str) -> None:
            b.store(b.constant(at.DenseAttr(type=ty.tensor((4,), ty.F32), values=value), name=name), tile)

        b.if_else(b.cmp(Arith.cmpi, "sgt", n_arg, c4, name="big"), lambda: fill(2.0, "twos"), lambda: fill(1.0, "ones"))
        b.func_return()
    text = ktir.print_module(b.module)
    assert "scf.if %big {\n    %twos = " in text and "} else {\n    %ones = " in text
    _parses_verifies_and_picks(text, b.module)


def test_parallel_builds_a_two_dimensional_loop_that_round_trips_and_runs() -> None:
    np = pytest.importorskip("numpy")
    import reference_interp

    b = Builder()
    mt = ty.memref((3, 5), ty.F32)
    with b.func("f", [("m", mt)]) as (m,):
        zero, one, rows, cols = b.index(0), b.index(1), b.index(3), b.index(5)
        with b.parallel([zero, zero], [rows, cols], [one, one], names=["i", "j"]) as (i, j):
            v = b.create(Memref.load, [m, i, j], [ty.F32])[0]
            b.create(Memref.store, [b.arith.addf(v, v), m, i, j], [])
        b.func_return()
    text = ktir.print_module(b.module)
    assert "scf.parallel (%i, %j) = (%0, %0) to (%2, %3) step (%1, %1)" in text
    again = ktir.parse(text)
    assert again == b.module and [d for d in verify(again) if d.severity == "error"] == []
    data = np.arange(15, dtype=np.float32).reshape(3, 5)
    out = reference_interp.run(again, args={"m": data.copy()}).outputs["m"]
    np.testing.assert_array_equal(out, data * 2)
    with pytest.raises(BuildError, match="2 lower bounds, 1 upper bounds"), b.parallel([zero, zero], [rows], [one, one]):
        pass
