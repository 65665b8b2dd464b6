"""What ktir-cpu's example kernels need from `ktir run` beyond their text, in programs written
here (ktir.builder), each run and checked against numpy:

- several free integer arguments (a Triton matmul's K and block sizes, an offset into a view,
  a trip count nothing bounds): `--random-inputs` values each from how it is used, and a
  kernel no value runs is one error naming the arguments and `--arg`;
- views at constant addresses in a tile's scratchpad (RFC 0682 C.3: a distributed view over
  HBM and two LX pieces): `ktir run --memory NAME=ct_local:ADDRESS:PATH.npy`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ktir
import reference_interp as ri
from ktir.builder import Builder, box
from ktir.cli import main
from ktir.ir import affine as af
from ktir.ir import attributes as at
from ktir.ir import types as ty
from ktir.verify import validate_text
from reference_interp.errors import KtirRuntimeError
from reference_interp.executor import At
from reference_interp.inputs import infer_args, size_hints
from tests.compat.built import valid

F16, F32 = ty.F16, ty.F32


def _muli(b: Builder, x: ktir.builder.Value, y: ktir.builder.Value, name: str) -> ktir.builder.Value:
    return b.create("arith.muli", [x, y], [ty.INDEX], result_names=[name])[0]


def _blocked_matmul(m: int, k: int, n: int, bm: int, bn: int, bk: int) -> ktir.Module:
    """C = A @ B on a [m/bm, n/bn] grid, each tile looping over K in steps of BLOCK_SIZE_K, with
    K and the three block sizes as arguments the way Triton's lowering passes them."""
    b = Builder()
    args = [("a", ty.INDEX), ("bb", ty.INDEX), ("c", ty.INDEX), ("K", ty.INDEX),
            ("BM", ty.INDEX), ("BN", ty.INDEX), ("BK", ty.INDEX)]
    with b.func("mm", args, grid=[m // bm, n // bn]) as (a, bb, c, kk, bm_, bn_, bk_):
        pm, pn = b.tile_id(2, ["pm", "pn"])
        z = b.index(0, "z")
        av = b.memory_view(a, [m, k], [k, 1], F32, name="av")
        bv = b.memory_view(bb, [k, n], [n, 1], F32, name="bv")
        cv = b.memory_view(c, [m, n], [n, 1], F32, name="cv")
        om, on = _muli(b, pm, bm_, "om"), _muli(b, pn, bn_, "on")
        f0 = b.constant(0.0, F32, "f0")
        zero = b.fill(f0, b.empty(ty.tensor((bm, bn), F32)), "zero")
        with b.for_(z, kk, bk_, [zero], names=["kk0", "acc"], results=["sum"]) as (k0, acc):
            x = b.load(b.access_tile(av, [om, k0], box(bm, bk), [bm, bk], name="at"), F32, "x")
            y = b.load(b.access_tile(bv, [k0, on], box(bk, bn), [bk, bn], name="bt"), F32, "y")
            prod = b.dps("linalg.matmul", [x, y], [b.fill(f0, b.empty(ty.tensor((bm, bn), F32)))], name="p")
            b.yield_(b.create("arith.addf", [acc, prod], [ty.tensor((bm, bn), F32)], result_names=["nacc"])[0])
        b.store(b.last_results[0], b.access_tile(cv, [om, on], box(bm, bn), [bm, bn], name="ct"))
        b.func_return()
    return valid(b)


def test_matmul_sizes_and_block_sizes_come_from_their_uses() -> None:
    module = _blocked_matmul(16, 64, 64, 8, 32, 16)
    notes: list[str] = []
    args = infer_args(module, None, {}, 3, {}, notes=notes)
    # K walks dimension 1 of A (64 columns); each block size is the tile extent it scales or steps
    assert (args["K"], args["BM"], args["BN"], args["BK"]) == (64, 8, 32, 16)
    assert any(n.startswith("K = 64: the upper bound of a loop") for n in notes)
    a, bb = args["a"].reshape(16, 64), args["bb"].reshape(64, 64)
    result = ri.run(module, args=args)
    np.testing.assert_allclose(result.outputs["c"].reshape(16, 64), a @ bb, rtol=1e-4, atol=1e-4)


def test_matmul_from_the_command_line_names_every_inferred_value(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mm.ktir"
    path.write_text(ktir.print_module(_blocked_matmul(8, 32, 32, 4, 16, 8)))
    out = tmp_path / "o.npz"
    assert main(["run", str(path), "--random-inputs", "5", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    for line in ("K = 32", "BM = 4", "BN = 16", "BK = 8"):
        assert f"note: {line}:" in err
    got = np.load(out)
    np.testing.assert_allclose(got["c"].reshape(8, 32), got["a"].reshape(8, 32) @ got["bb"].reshape(32, 32),
                               rtol=1e-4, atol=1e-4)
    # a given value is kept and the others are still inferred
    assert main(["run", str(path), "--random-inputs", "--arg", "K=16", "--out", str(out)]) == 0
    got = np.load(out)
    half = got["a"].reshape(8, 32)[:, :16] @ got["bb"].reshape(32, 32)[:16]
    np.testing.assert_allclose(got["c"].reshape(8, 32), half, rtol=1e-4, atol=1e-4)


def _offset_and_count() -> ktir.Module:
    """y[r, :] = x[start + r, :] + bias * count for r < 4: an offset into a view (Triton's
    `dim1_start`) and a count only converted to a float (nothing bounds it)."""
    b = Builder()
    with b.func("shift", [("x", ty.INDEX), ("y", ty.INDEX), ("start", ty.INDEX), ("count", ty.INDEX)]) as (x, y, st, cnt):
        z = b.index(0, "z")
        xv = b.memory_view(x, [8, 16], [16, 1], F32, name="xv")
        yv = b.memory_view(y, [4, 16], [16, 1], F32, name="yv")
        row = b.load(b.access_tile(xv, [st, z], box(4, 16), [4, 16], name="xt"), F32, "row")
        ci = b.create("arith.index_cast", [cnt], [ty.I32], result_names=["ci"])[0]
        cf = b.create("arith.sitofp", [ci], [F32], result_names=["cf"])[0]
        splat = b.create("tensor.splat", [cf], [ty.tensor((4, 16), F32)], result_names=["cs"])[0]
        s = b.create("arith.addf", [row, splat], [ty.tensor((4, 16), F32)], result_names=["s"])[0]
        b.store(s, b.access_tile(yv, [z, z], box(4, 16), [4, 16], name="yt"))
        b.func_return()
    return valid(b)


def test_an_offset_starts_at_zero_and_an_unbounded_count_is_searched() -> None:
    module = _offset_and_count()
    fn = module.functions()[0]
    assert size_hints(fn, ["start", "count"], module.type_aliases, module.attr_aliases) == {
        "start": (0, "an offset added to dimension 0 of an access tile")}
    notes: list[str] = []
    args = infer_args(module, None, {}, 0, {}, notes=notes)
    assert args["start"] == 0 and args["count"] == 1
    assert notes[-1].startswith("count = 1: the smallest of 1, 2, 4")
    x = args["x"].reshape(8, 16)
    np.testing.assert_allclose(ri.run(module, args=args).outputs["y"].reshape(4, 16), x[:4] + 1.0)
    # a start given by hand moves the rows read
    args = infer_args(module, None, {"start": 3}, 0, {})
    x = args["x"].reshape(-1, 16)
    np.testing.assert_allclose(ri.run(module, args=args).outputs["y"].reshape(4, 16), x[3:7] + 1.0)


def test_no_values_that_run_is_one_error_naming_the_arguments(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Two counts that only reach an `arith.divui` by their difference: every common value
    divides by zero; the error names both and says how to give them."""
    b = Builder()
    with b.func("bad", [("x", ty.INDEX), ("p", ty.INDEX), ("q", ty.INDEX)]) as (x, p, q):
        z = b.index(0, "z")
        xv = b.memory_view(x, [4], [1], F32, name="xv")
        d = b.create("arith.subi", [p, q], [ty.INDEX], result_names=["d"])[0]
        r = b.create("arith.divui", [b.index(8, "c8"), d], [ty.INDEX], result_names=["r"])[0]
        t = b.load(b.access_tile(xv, [z], box(4), [4], name="xt"), F32, "t")
        del r
        b.store(t, b.access_tile(xv, [z], box(4), [4], name="xt2"))
        b.func_return()
    module = valid(b)
    with pytest.raises(KtirRuntimeError) as e:
        infer_args(module, None, {}, 0, {})
    assert e.value.kind == "argument"
    assert "arguments p, q" in e.value.detail and "--arg p=... --arg q=..." in e.value.detail
    path = tmp_path / "bad.ktir"
    path.write_text(ktir.print_module(module))
    assert main(["run", str(path), "--random-inputs"]) == 1
    err = capsys.readouterr().err
    assert "error[runtime.argument]" in err and "Traceback" not in err
    # given by hand, it runs
    assert main(["run", str(path), "--random-inputs", "--arg", "p=3", "--arg", "q=1"]) == 0


def _hbm_and_two_scratchpads() -> ktir.Module:
    """RFC 0682 C.3's shape: B (12x8, HBM) = a distributed view of rows 0-5 in HBM, rows 6-7 in
    a tile's scratchpad stored column-major, rows 8-11 in the scratchpad row-major, every view
    at a constant element address."""
    b = Builder()
    lx = at.MemorySpaceAttr(kind="ct_local")

    def rows(lo: int, hi: int) -> af.IntegerSet:
        i, j = af.dim(0), af.dim(1)
        return af.IntegerSet(num_dims=2, num_symbols=0, constraints=(
            af.Constraint(expr=i - lo, is_equality=False), af.Constraint(expr=-i + hi, is_equality=False),
            af.Constraint(expr=j, is_equality=False), af.Constraint(expr=-j + 7, is_equality=False)))

    with b.func("copy", []):
        z = b.index(0, "z")
        hbm = b.memory_view(b.index(0, "h_addr"), [6, 8], [8, 1], F16, coordinate_set=rows(0, 5), name="hv")
        col = b.memory_view(b.index(512, "l0_addr"), [2, 8], [1, 2], F16, memory_space=lx,
                            coordinate_set=rows(6, 7), name="l0v")
        row = b.memory_view(b.index(1024, "l1_addr"), [4, 8], [8, 1], F16, memory_space=lx,
                            coordinate_set=rows(8, 11), name="l1v")
        whole = b.distributed_view([hbm, col, row], [12, 8], name="av")
        out = b.memory_view(b.index(2048, "b_addr"), [12, 8], [8, 1], F16, name="bv")
        data = b.load(b.access_tile(whole, [z, z], box(12, 8), [12, 8], name="at"), F16, "d")
        b.store(data, b.access_tile(out, [z, z], box(12, 8), [12, 8], name="bt"))
        b.func_return()
    return valid(b)


def test_scratchpad_arrays_at_constant_addresses(tmp_path: Path) -> None:
    module = _hbm_and_two_scratchpads()
    rng = np.random.default_rng(7)
    h = rng.standard_normal((6, 8)).astype(np.float16)
    l0 = rng.standard_normal(16).astype(np.float16)  # column-major 2x8: (r, c) at r + 2c
    l1 = rng.standard_normal((4, 8)).astype(np.float16)
    r, c = np.meshgrid(np.arange(2), np.arange(8), indexing="ij")
    expected = np.concatenate([h, l0[r + 2 * c], l1])
    with pytest.raises(KtirRuntimeError) as e:  # the scratchpad pieces missing: nothing wrote them
        ri.run(module, memory={"H": At(h, 0), "B": At(np.zeros((12, 8), np.float16), 2048)})
    assert e.value.kind == "uninitialised"
    memory = {"H": At(h, 0), "L0": At(l0, 512, "ct_local"), "L1": At(l1, 1024, "ct_local"),
              "B": At(np.zeros((12, 8), np.float16), 2048)}
    np.testing.assert_array_equal(ri.run(module, memory=memory).outputs["B"], expected)
    # from the command line
    path = tmp_path / "c3.ktir"
    path.write_text(ktir.print_module(module))
    argv = ["run", str(path), "--out", str(tmp_path / "o.npz")]
    for name, arr, where in (("H", h, "0"), ("L0", l0, "ct_local:512"), ("L1", l1, "ct_local:1024"),
                             ("B", np.zeros((12, 8), np.float16), "2048")):
        np.save(tmp_path / f"{name}.npy", arr)
        argv += ["--memory", f"{name}={where}:{tmp_path / name}.npy"]
    assert main(argv) == 0
    got = np.load(tmp_path / "o.npz")
    np.testing.assert_array_equal(got["B"], expected)
    np.testing.assert_array_equal(got["L1"].reshape(4, 8), l1)  # a scratchpad array is written back per tile


def _row_max(bits: int) -> ktir.Module:
    """max over a row of 8 f16 values, starting from the f16 constant with these bits."""
    b = Builder()
    with b.func("rowmax", [("x", ty.INDEX), ("y", ty.INDEX)]) as (x, y):
        z = b.index(0, "z")
        xv = b.memory_view(x, [1, 8], [8, 1], F16, name="xv")
        yv = b.memory_view(y, [1], [1], F16, name="yv")
        row = b.load(b.access_tile(xv, [z, z], box(1, 8), [1, 8], name="xt"), F16, "row")
        start = b.constant(at.FloatAttr(value=float(np.array(bits, np.uint16).view(np.float16)), type=F16, bits=bits))
        init = b.fill(start, b.empty(ty.tensor((1,), F16)), "init")
        m = b.reduce("arith.maximumf", [row], [init], [1], name="m")
        b.store(m, b.access_tile(yv, [z], box(1), [1], name="yt"))
        b.func_return()
    return ktir.parse(ktir.print_module(b.module), "built.ktir")


def test_bf16_infinity_bits_in_an_f16_constant_are_a_nan_with_a_warning() -> None:
    """ktir-cpu's softmax_small and sdpa_2d start a max at `0xFF80 : f16`: MLIR reads the bits of
    the type, a NaN in f16 (bf16's -inf), which arith.maximumf propagates. `0xFC00` is f16's -inf."""
    x = np.array([[1.5, -2.0, 3.25, 0.5, 2.75, -1.0, 0.25, 1.0]], np.float16)
    for bits, warned, want in ((0xFF80, True, np.nan), (0xFC00, False, 3.25)):
        module = _row_max(bits)
        text = ktir.print_module(module)
        assert f"0x{bits:04X} : f16" in text  # printed back as written
        _, diagnostics = validate_text(text, "built.ktir")
        assert not [d for d in diagnostics if d.severity == "error"]
        assert any(d.id == "arith.constant.nan" and d.severity == "warning" for d in diagnostics) == warned
        got = ri.run(module, args={"x": x, "y": np.zeros(1, np.float16)}).outputs["y"]
        np.testing.assert_array_equal(got, np.array([want], np.float16))


def _ring_sum(tiles: int, width: int, drop_unit_dim: bool) -> ktir.Module:
    """Every tile contributes X[t, :] as a [1, width] partial; an all-reduce sums them and tile 0
    stores the [width] result. ktir-cpu's ring reductions give the reduce the [width] result type
    directly (`drop_unit_dim`); KTIR, like upstream's verifier, wants the partial's type there and
    a tensor.collapse_shape after."""
    b = Builder()
    part, flat = ty.tensor((1, width), F32), ty.tensor((width,), F32)
    i, g = af.dim(0), af.sym(0)
    everyone = af.IntegerSet(num_dims=1, num_symbols=1, constraints=(
        af.Constraint(expr=i - g * tiles, is_equality=False), af.Constraint(expr=-i + g * tiles + (tiles - 1), is_equality=False)))
    one = af.IntegerSet(num_dims=1, num_symbols=0, constraints=(af.Constraint(expr=af.dim(0), is_equality=True),))
    future = ty.TileFutureType(partial_types=(part,), groups=at.IntegerSetAttr(value=one))
    with b.func("ring", [("x", ty.INDEX), ("out", ty.INDEX)], grid=[tiles]) as (x, out):
        (tid,) = b.tile_id(1, ["tid"])
        z = b.index(0, "z")
        xv = b.memory_view(x, [tiles, width], [width, 1], F32, name="xv")
        ov = b.memory_view(out, [width], [1], F32, name="ov")
        row = b.load(b.access_tile(xv, [tid, z], box(1, width), [1, width], name="xt"), F32, "row")
        with b.produce(everyone, future, name="fut"):
            b.yield_(row, op="ktdp.yield_partial")
        (fut,) = b.last_results
        ident = b.fill(b.constant(0.0, F32, "f0"), b.empty(part, "e"), "ident")
        with b.reduce_tiles(fut, everyone, [ident], ["l", "r"], ["sum"]) as (lhs, rhs):
            (s,) = b.create("arith.addf", [lhs, rhs], [part], result_names=["s"])
            b.yield_(s, op="ktdp.yield_reduced")
        (total,) = b.last_results
        if drop_unit_dim:
            reduce_op = next(op for op in b.module.walk() if op.name == "ktdp.inter_tile_reduce")
            reduce_op.result_types = [flat]
            total = ktir.builder.Value(total.name, flat)
        else:
            total = b.collapse_shape(total, [[0, 1]], flat, name="flat")
        with b.if_(b.cmp("arith.cmpi", "eq", tid, z, "first")):
            b.store(total, b.access_tile(ov, [z], box(width), [width], name="ot"))
        b.func_return()
    return ktir.parse(ktir.print_module(b.module), "built.ktir")


def test_a_reduce_result_without_the_partials_unit_dimension_is_c1_with_the_fix_named() -> None:
    _, diagnostics = validate_text(ktir.print_module(_ring_sum(4, 16, True)), "built.ktir")
    errors = [d for d in diagnostics if d.severity == "error"]
    assert [d.id for d in errors] == ["ktdp.inter_tile_reduce.C1"]
    assert "tensor<16xf32> for the partial tensor<1x16xf32>" in errors[0].message
    assert "tensor.collapse_shape" in errors[0].message
    module = _ring_sum(4, 16, False)  # the fix the message names: validates, runs, sums the rows
    _, diagnostics = validate_text(ktir.print_module(module), "built.ktir")
    assert not [d for d in diagnostics if d.severity == "error"]
    x = np.random.default_rng(21).standard_normal((4, 16)).astype(np.float32)
    got = ri.run(module, args={"x": x, "out": np.zeros(16, np.float32)}).outputs["out"]
    np.testing.assert_allclose(got, x.sum(0), rtol=1e-5, atol=1e-6)
