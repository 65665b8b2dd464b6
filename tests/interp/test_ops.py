"""The rest of the op inventory (scf, tensor, memref, affine, func, named linalg), mostly by
running the functions of tests/corpus/mlir/*.ktir against hand-computed results."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ktir
import reference_interp as ri
from ktir.dialects.registry import OPS
from reference_interp.compiler import FACTORIES, TERMINATORS
from reference_interp.memory import MemoryView

from .helpers import ROOT, fails, run

MLIR = ROOT / "tests" / "corpus" / "mlir"


def corpus(name: str) -> ktir.Module:
    return ktir.parse((MLIR / name).read_text(), name)


def test_every_op_of_the_inventory_is_implemented() -> None:
    containers = {"builtin.module", "func.func"}
    missing = [n for n in OPS if n not in FACTORIES and n not in TERMINATORS and n not in containers]
    assert missing == []


# ---------------------------------------------------------------------- scf


def test_scf_for_loops() -> None:
    buf = np.arange(128, dtype=np.float32)
    r = ri.run(corpus("scf.ktir"), "for_loops", args={"lb": 0, "ub": 8, "step": 2, "init": 1.5, "buf": buf})
    doubled = buf.copy()
    doubled[0:8:2] *= 2
    np.testing.assert_array_equal(r.outputs["buf"], doubled)
    s = np.float32(1.5)
    for i in range(0, 8, 2):
        s = np.float32(s + doubled[i])
    for _ in range(4):
        for _ in range(4):
            s = np.float32(s * np.float32(1.5))
    nested, isum = r.returns[0]
    assert nested == s and isum == sum(range(8))


@pytest.mark.parametrize("c", [True, False])
def test_scf_if(c: bool) -> None:
    t = np.arange(4, dtype=np.float32)
    r = ri.run(corpus("scf.ktir"), "conditionals", args={"c": c, "a": 2.0, "b": 3.0, "t": t, "buf": np.zeros(4, np.float32)})
    x, y = r.returns[0]
    assert x == (5.0 if c else -1.0)
    np.testing.assert_array_equal(y, t if c else -t)
    assert r.outputs["buf"][0] == (2.0 if c else 3.0)


def test_scf_while_parallel_forall_execute_region() -> None:
    m = corpus("scf.ktir")
    assert ri.run(m, "while_loop", args={"init": 3, "limit": 100}).returns[0] == (192,)
    buf = np.arange(128, dtype=np.float32)
    r = ri.run(m, "parallel_reduce", args={"buf": buf, "lb": 2, "ub": 10, "step": 3})
    assert r.returns[0] == (np.float32(2 + 5 + 8),)
    assert (r.outputs["buf"][:7] == 0).all() and r.outputs["buf"][7] == 7
    src = np.arange(64, dtype=np.float32)
    a, b = ri.run(m, "forall_loops", args={"src": src, "init": np.zeros(64, np.float32)}).returns[0]
    np.testing.assert_array_equal(a, -src)
    np.testing.assert_array_equal(b, -src)
    assert ri.run(m, "execute_region", args={"a": 41}).returns[0] == (42,)


# ---------------------------------------------------------------------- tensor


def test_tensor_creation_and_access() -> None:
    t = np.arange(32, dtype=np.float32).reshape(4, 8)
    e, s, sd, v, w = ri.run(corpus("tensor.ktir"), "create_and_access",
                            args={"x": 2.5, "t": t, "i": 1, "j": 3, "n": 5}).returns[0]
    assert e.shape == (4, 5) and (s == 2.5).all() and sd.shape == (5,)
    assert v == t[1, 3]
    want = t.copy()
    want[3, 1] = t[1, 3]
    np.testing.assert_array_equal(w, want)


def test_tensor_slices_and_reshapes() -> None:
    m = corpus("tensor.ktir")
    t = np.arange(32, dtype=np.float32).reshape(4, 8)
    a, row, b = ri.run(m, "slices", args={"t": t, "o": 2}).returns[0]
    np.testing.assert_array_equal(a, t[2:4])
    np.testing.assert_array_equal(row, t[3])
    want = t.copy()
    want[0:2] = t[2:4]
    np.testing.assert_array_equal(b, want)
    v = np.arange(128, dtype=np.float16)
    x, y, z, q, r = ri.run(m, "reshapes", args={"v": v, "m": v.reshape(1, 128), "d": np.arange(8, dtype=np.float32),
                                                  "n": 2, "t": t, "shape": np.array([32], np.int32)}).returns[0]
    assert x.shape == (1, 128) and y.shape == (2, 64) and z.shape == (128,) and q.shape == (2, 4)
    np.testing.assert_array_equal(r, t.reshape(32))
    with pytest.raises(ri.KtirRuntimeError, match="out-of-bounds|leaves dimension"):
        ri.run(m, "slices", args={"t": t, "o": 3})


def test_tensor_concat_pad_generate_dim_cast() -> None:
    m = corpus("tensor.ktir")
    a = np.arange(16, dtype=np.float32).reshape(2, 8)
    cat, pad, gen = ri.run(m, "concat_pad_generate", args={"a": a, "b": a + 100, "n": 3}).returns[0]
    np.testing.assert_array_equal(cat, np.concatenate([a, a + 100]))
    np.testing.assert_array_equal(pad, np.pad(a, ((1, 2), (1, 3))))
    np.testing.assert_array_equal(gen, np.add.outer(np.arange(3), np.arange(3)))
    d1, c, d0 = ri.run(m, "dim_cast", args={"t": np.zeros((4, 8), np.float32)}).returns[0]
    assert (d1, d0, c.shape) == (8, 4, (4, 8))


# ---------------------------------------------------------------------- memref, affine, func


def test_memref_views() -> None:
    m = corpus("memref.ktir")
    big = np.arange(64 * 64, dtype=np.float16).reshape(64, 64)
    sv, row, dyn = ri.run(m, "subview_cast", args={"m": big, "i": 2, "j": 3}).returns[0]
    assert isinstance(sv, MemoryView) and sv.sizes == (8, 16) and sv.strides == (64, 1)
    assert sv.addr == (2 * 64 + 3) * 2 and row.sizes == (16,) and dyn.sizes == (64, 64)
    a, b = ri.run(m, "reinterpret", args={"m": big.reshape(-1), "off": 128}).returns[0]
    assert a.sizes == (64, 64) and b.addr == 128 * 2


def test_memref_load_store_dim_and_layouts() -> None:
    mm = np.arange(24, dtype=np.float32).reshape(3, 8)
    t = np.arange(16, dtype=np.float32).reshape(4, 4)
    r = ri.run(corpus("memref.ktir"), "load_store_dim", args={"m": mm, "t": t, "i": 1, "j": 2})
    s, d = r.returns[0]
    # t has the transposing layout (d0, d1) -> (d1, d0): element [j, i] is stored at i * 4 + j
    assert s == mm[1, 2] + t.reshape(-1)[1 * 4 + 2] and d == 3
    assert r.outputs["m"][2, 1] == s


def test_memref_alloc() -> None:
    a, b = ri.run(corpus("memref.ktir"), "alloc_spaces", args={"n": 3}).returns[0]
    assert a.sizes == (64,) and b.sizes == (3, 4) and a.space == "alloc"


def test_affine_ops() -> None:
    got = ri.run(corpus("affine.ktir"), "affine_ops", args={"tid": 3, "i": 5, "j": 7, "n": 230, "m": 9}).returns[0]
    assert got == (192, min(64, 230 - 192), max(0, 5 - 7), 230 // 8 + 9 % 4, 3, 5 * 4 + math.ceil(7 / 2) + 230,
                   min(5 + 16, 230, 18))


def test_func_call_and_declarations() -> None:
    m = corpus("func.ktir")
    q, p1 = ri.run(m, "grid2d").returns[0]
    assert q == 13 and p1 == np.float32(2.25)
    e = fails("unsupported", m, func="kernel", args={"in": 1.0, "n": 2})
    assert "declaration" in e.message


def test_recursion_is_bounded() -> None:
    text = """
func.func @f(%x: index) -> index {
  %r = func.call @f(%x) : (index) -> index
  return %r : index
}
"""
    fails("memory-limit", text, args={"x": 1})


# ---------------------------------------------------------------------- linalg named ops


def test_named_elementwise_and_contractions() -> None:
    m = corpus("linalg.ktir")
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 2, (4, 64)).astype(np.float16)
    b = rng.uniform(0.5, 2, (4, 64)).astype(np.float16)
    (got,) = ri.run(m, "elementwise", args={"a": a, "b": b}).returns[0]
    f = np.float16
    x = ((a + b) - b) * a / b
    x = np.minimum(np.maximum(x, a), b)
    want = -np.abs(np.log(np.exp(x)))
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)
    assert got.dtype == f
    A, B = rng.standard_normal((32, 128)).astype(np.float16), rng.standard_normal((128, 64)).astype(np.float16)
    BA, BB = rng.standard_normal((2, 32, 128)).astype(np.float16), rng.standard_normal((2, 128, 64)).astype(np.float16)
    mm, ta, tb, bmm = ri.run(m, "contractions", args={"A": A, "B": B, "At": np.ascontiguousarray(A.T),
                                                      "Bt": np.ascontiguousarray(B.T), "BA": BA, "BB": BB}).returns[0]
    want = A.astype(np.float32) @ B.astype(np.float32)
    for g in (mm, ta, tb):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(bmm, BA.astype(np.float32) @ BB.astype(np.float32), rtol=1e-4, atol=1e-3)


def test_every_corpus_function_without_arguments_runs() -> None:
    """Smoke: functions of the mlir corpus that need no inputs run without internal errors."""
    for path in sorted(MLIR.glob("*.ktir")):
        m = ktir.parse(path.read_text(), path.name)
        for fn in m.functions():
            entry = fn.regions[0].blocks[0] if fn.regions and fn.regions[0].blocks else None
            if entry is None or entry.arguments:
                continue
            name = str(fn.attributes["sym_name"].value)  # type: ignore[attr-defined]
            try:
                ri.run(m, name)
            except ri.KtirRuntimeError as e:
                assert e.kind != "internal", f"{path.name} @{name}: {e.message}"


def test_run_reuses_the_compiled_program() -> None:
    text = "func.func @f(%a: index) -> index {\n  %r = arith.addi %a, %a : index\n  return %r : index\n}\n"
    m = ktir.parse(text, "t.ktir")
    assert [ri.run(m, args={"a": i}).returns[0][0] for i in range(3)] == [0, 2, 4]
    assert run(text, args={"a": 2**62}).returns[0] == (-(2**63),)  # index arithmetic wraps at 64 bits
