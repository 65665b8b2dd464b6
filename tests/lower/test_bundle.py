"""Bundles: bundle.mlir parsing (symbolic addresses, allocations, loops) and the driver kernel
that runs the steps in order with ct_local contents carried, checked in reference_interp."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ktir.lower import SdscError, load_bundle, lower_bundle, lower_path, parse_bundle_text
from ktir.lower.bundle import Linear
from ktir.verify import validate_text

from .interp import local, run
from .stick import from_device
from .synth import T, core_table, device, sdsc, start_address, write

RNG = np.random.default_rng(11)


def _offsets(t: T, n: dict[str, int], splits: dict[str, int]) -> list[int]:
    """Each core's start address relative to the tensor's base."""
    per_core = {d: n[d] // splits.get(d, 1) for d in n}
    base = T(**{**t.__dict__, "base": 0, "symbols": None})
    return [start_address(base, n, per_core, row) for row in core_table(n, splits)]


class _Text:
    """Writes bundle.mlir statements for per-core symbolic addresses."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.n = 0

    def per_core(self, base: str, offsets: list[int]) -> list[str]:
        names = []
        for off in offsets:
            if off == 0:
                names.append(base)
                continue
            self.n += 1
            self.lines.append(f"%off_{self.n} = arith.constant {off} : index")
            self.lines.append(f"%addr_{self.n} = arith.addi {base}, %off_{self.n} : index")
            names.append(f"%addr_{self.n}")
        return names


def _row(scale: list[int], role: str, **kw: Any) -> T:
    """Layout class OUTPUT, [mb, out] stick out: device [mb, out/64, 64]."""
    return T("OUTPUT", ["out", "mb"], "out", scale, role, **kw)


def _lx_chain_bundle(tmp_path: Path) -> Path:
    """exp: HBM x -> LX; add: LX + broadcast stick -> pooled HBM; restickify the pool with another split."""
    n, split_mb, split_out = {"mb": 128, "out": 128}, {"mb": 2}, {"out": 2}
    x = _row([1, 1], "in", symbols=[-1, -2])
    e = _row([1, 1], "out", space="lx")
    e_in = _row([1, 1], "in", space="lx")
    y = _row([-2, -1], "in", symbols=[-3, -4])
    s = _row([1, 1], "out", symbols=[-5, -6])
    r_in = _row([1, 1], "in", symbols=[-7, -8])
    r_out = T("KERNEL", ["out", "mb"], "mb", [1, 1], "out", symbols=[-9, -10])  # device [mb/64, out, 64]
    d = tmp_path / "bundle"
    d.mkdir()
    write(d / "sdsc_0.json", sdsc("0_exp", "exp", n, split_mb, [x, e]))
    write(d / "sdsc_1.json", sdsc("1_add", "add", n, split_mb, [e_in, y, s]))
    write(d / "sdsc_2.json", sdsc("2_ReStickifyOpHBM", "ReStickifyOpHBM", n, split_out, [r_in, r_out]))
    text = _Text()
    ax = text.per_core("%arg_0", _offsets(x, n, split_mb))
    ay = text.per_core("%arg_1", _offsets(y, n, split_mb))
    a_s = text.per_core("%pool", _offsets(s, n, split_mb))
    a_r = text.per_core("%pool", _offsets(r_in, n, split_out))
    a_o = text.per_core("%arg_2", _offsets(r_out, n, split_out))
    body = "\n    ".join(text.lines)
    args = ", ".join(f"%arg_{i}_base_addr: !sdscbundle.input_arg<index>" for i in range(3))
    extracts = "\n    ".join(
        f"%arg_{i} = sdscbundle.input_arg_extract value from %arg_{i}_base_addr : !sdscbundle.input_arg<index> -> index"
        for i in range(3))
    (d / "bundle.mlir").write_text(f"""module {{
  func.func @sdsc_bundle({args}) {{
    %pool = sdscbundle.device_mem_allocate 32768 bytes : index
    {extracts}
    {body}
    sdscbundle.sdsc_execute ({", ".join(ax)}) {{sdsc_filename="sdsc_0.json", symbol_ids=[-1, -2]}}
    sdscbundle.sdsc_execute ({", ".join(ay + a_s)}) {{sdsc_filename="sdsc_1.json", symbol_ids=[-3, -4, -5, -6]}}
    sdscbundle.sdsc_execute ({", ".join(a_r + a_o)}) {{sdsc_filename="sdsc_2.json", symbol_ids=[-7, -8, -9, -10]}}
    return
  }}
}}
""")
    return d


def test_symbolic_bundle_with_lx_chain_and_cross_core_dependency(tmp_path: Path) -> None:
    lowered = lower_bundle(load_bundle(_lx_chain_bundle(tmp_path)))
    _, diagnostics = validate_text(lowered.text)
    assert not [x for x in diagnostics if x.severity != "note"]
    args = {a.name: a for a in lowered.args}
    assert list(args) == ["arg_0_base_addr", "arg_1_base_addr", "arg_2_base_addr", "pool", "lx_0x0"]
    assert args["pool"].users == ("sdsc_1_add.Tensor2", "sdsc_2_ReStickifyOpHBM.Tensor0")
    assert lowered.text.count("ktdp.inter_tile_reduce") == 2  # a barrier between consecutive steps
    x = RNG.uniform(-2, 2, (128, 128)).astype(np.float16)
    y = RNG.uniform(-2, 2, 64).astype(np.float16)  # one stick; lane 0 is the value
    row = T("OUTPUT", ["out", "mb"], "out", [1, 1], "in")
    result = run(lowered.text, func="sdsc_bundle", args={
        "arg_0_base_addr": device(x, ["mb", "out"], row),
        "arg_1_base_addr": y,
        "arg_2_base_addr": np.zeros((2, 128, 64), np.float16),
        "pool": np.zeros(16384, np.float16),
        "lx_0x0": local(np.zeros((2, 64 * 128), np.float16)),
    })
    want = (np.exp(x.astype(np.float32)).astype(np.float16) + y[0]).astype(np.float16)
    got = from_device(result.outputs["arg_2_base_addr"], ["mb", "out"], ["out", "mb"], "mb")
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)


def test_a_symbolic_address_off_the_layout_is_refused(tmp_path: Path) -> None:
    d = _lx_chain_bundle(tmp_path)
    mlir = d / "bundle.mlir"
    mlir.write_text(mlir.read_text().replace("%off_1 = arith.constant 16384", "%off_1 = arith.constant 16512"))
    with pytest.raises(SdscError, match=r"sdsc_0\.json: Tensor0 \(hbm\) core 1 starts at %arg_0_base_addr \+ 16512, "
                                        r"but the layout .* gives %arg_0_base_addr \+ 16384"):
        lower_bundle(load_bundle(d))


def test_an_unbound_symbol_is_refused(tmp_path: Path) -> None:
    d = _lx_chain_bundle(tmp_path)
    mlir = d / "bundle.mlir"
    mlir.write_text(mlir.read_text().replace("symbol_ids=[-1, -2]", "symbol_ids=[-1, -12]"))
    with pytest.raises(SdscError, match=r"Tensor0 core 1 has symbolic start address -2, which this sdsc_execute does not bind"):
        lower_bundle(load_bundle(d))


def test_loop_over_chunks(tmp_path: Path) -> None:
    """scf.for over 3 chunks of 32 rows, addresses from affine.apply of the loop variable."""
    n, splits = {"mb": 32, "out": 64}, {"mb": 2}
    x = _row([1, 1], "in", symbols=[-1, -2])
    y = _row([1, 1], "out", symbols=[-3, -4])
    d = tmp_path / "loop"
    d.mkdir()
    write(d / "sdsc_0.json", sdsc("0_tanh", "tanh", n, splits, [x, y]))
    chunk = 32 * 64 * 2  # bytes per chunk
    half = chunk // 2  # core 1's offset
    (d / "bundle.mlir").write_text(f"""#chunk = affine_map<(d0)[s0] -> (s0 + {chunk}*d0)>
module {{
  func.func @sdsc_bundle(%x_base: !sdscbundle.input_arg<index>, %y_base: !sdscbundle.input_arg<index>) {{
    %x = sdscbundle.input_arg_extract value from %x_base : !sdscbundle.input_arg<index> -> index
    %y = sdscbundle.input_arg_extract value from %y_base : !sdscbundle.input_arg<index> -> index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %half = arith.constant {half} : index
    scf.for %i = %c0 to %c3 step %c1 {{
      %x0 = affine.apply #chunk(%i)[%x]
      %x1 = arith.addi %x0, %half : index
      %y0 = affine.apply affine_map<(d0)[s0] -> (s0 + {chunk}*d0)>(%i)[%y]
      %y1 = arith.addi %y0, %half : index
      sdscbundle.sdsc_execute (%x0, %x1, %y0, %y1) {{sdsc_filename="sdsc_0.json", "symbol_ids"=[-1, -2, -3, -4]}}
    }}
    return
  }}
}}
""")
    lowered = lower_path(d)  # verified
    assert "scf.for %i = %c0 to %c3 step %c1" in lowered.text
    assert [(a.name, a.elements) for a in lowered.args] == [("x_base", 3 * 32 * 64), ("y_base", 3 * 32 * 64)]
    xs = RNG.uniform(-2, 2, (3, 32, 64)).astype(np.float16)
    result = run(lowered.text, func="sdsc_bundle", args={
        "x_base": np.stack([device(c, ["mb", "out"], x) for c in xs]).reshape(-1),
        "y_base": np.zeros(3 * 32 * 64, np.float16),
    })
    got = result.outputs["y_base"].reshape(3, 32, 1, 64).reshape(3, 32, 64)
    np.testing.assert_allclose(got.astype(np.float32), np.tanh(xs.astype(np.float32)), rtol=4e-3, atol=1e-3)


BUNDLE = """module {
  func.func @b(%a_base: !sdscbundle.input_arg<index>, %n: !sdscbundle.input_arg<index, granularity=64, max_value=512>) {
    %a = sdscbundle.input_arg_extract value from %a_base : !sdscbundle.input_arg<index> -> index
    %g = sdscbundle.input_arg_extract granularity from %n : !sdscbundle.input_arg<index, granularity=64, max_value=512> -> index
    %m = sdscbundle.input_arg_extract max_value from %n : !sdscbundle.input_arg<index, granularity=64, max_value=512> -> index
    %k = arith.constant 3 : index
    %p = arith.muli %g, %k : index
    %q = arith.subi %a, %p : index
    sdscbundle.sdsc_execute (%q, %m) {sdsc_filename = "s.json", "symbol_ids" = [-1, -2]}
    return
  }
}
"""


def test_bundle_values_are_linear_forms() -> None:
    bundle = parse_bundle_text(BUNDLE)
    (step,) = bundle.steps()
    assert step.filename == "s.json"
    assert str(step.bindings[-1]) == "%a_base + -192" and step.bindings[-2] == Linear(512)
    assert [p.name for p in bundle.params] == ["a_base", "n"]


@pytest.mark.parametrize(("text", "message"), [
    ("module { func.func @b() { %x = memref.alloc() : index\n return } }", r"^bundle.mlir:1:32: error\[sdsc\]: 'memref\.alloc' is not supported in bundle\.mlir"),
    ("module { func.func @b(%a: !sdscbundle.input_arg<index>) {\n sdscbundle.sdsc_execute (%a) {sdsc_filename=\"s.json\", symbol_ids=[-1]}\n return } }",
     r"2:27: .*%a is a !sdscbundle.input_arg; extract it"),
    ("module { func.func @b() {\n sdscbundle.sdsc_execute () {symbol_ids=[]}\n return } }", r"2:2: .*needs sdsc_filename"),
    ("module { func.func @b(%n: index) {\n %c0 = arith.constant 0 : index\n %c1 = arith.constant 1 : index\n scf.for %i = %c0 to %n step %c1 {\n }\n return } }",
     r"4:22: .*upper bound %n = %n is not a compile-time constant"),
    ("module { func.func @b() { return }\n func.func @c() { return } }", r"a bundle holds one func.func, found 2"),
])
def test_bundle_errors_name_the_line(text: str, message: str) -> None:
    with pytest.raises(SdscError) as info:
        parse_bundle_text(text)
    assert re.search(message, info.value.render()), info.value.render()


def test_a_symbolic_sdsc_lowers_alone_with_its_addresses_unchecked(tmp_path: Path) -> None:
    lowered = lower_path(_lx_chain_bundle(tmp_path) / "sdsc_0.json")
    assert [c.status for c in lowered.checks["sdsc_0_exp"]] == ["symbolic", "match"]
    assert [(a.name, a.space, a.address) for a in lowered.args] == [("Tensor0", "global", None), ("Tensor1", "ct_local", 0)]
    assert "symbolic start addresses, checked against bundle.mlir when lowered as a bundle" in lowered.text


def test_values_shared_by_steps_dominate_loops_and_what_follows(tmp_path: Path) -> None:
    """A 2-core step and a guarded 1-core step in a loop, the 1-core step again after it."""
    n = {"mb": 32, "out": 64}
    d = tmp_path / "mixed"
    d.mkdir()
    write(d / "sdsc_0.json", sdsc("0_neg", "neg", n, {"mb": 2}, [_row([1, 1], "in", symbols=[-1, -2]), _row([1, 1], "out", symbols=[-3, -4])]))
    write(d / "sdsc_1.json", sdsc("1_identity", "identity", n, {}, [_row([1, 1], "in", symbols=[-1]), _row([1, 1], "out", symbols=[-2])]))
    chunk, half = 32 * 64 * 2, 32 * 64
    (d / "bundle.mlir").write_text(f"""module {{
  func.func @sdsc_bundle(%x_base: !sdscbundle.input_arg<index>, %y_base: !sdscbundle.input_arg<index>) {{
    %x = sdscbundle.input_arg_extract value from %x_base : !sdscbundle.input_arg<index> -> index
    %y = sdscbundle.input_arg_extract value from %y_base : !sdscbundle.input_arg<index> -> index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %half = arith.constant {half} : index
    scf.for %i = %c0 to %c2 step %c1 {{
      %x0 = affine.apply affine_map<(d0)[s0] -> (s0 + {chunk}*d0)>(%i)[%x]
      %x1 = arith.addi %x0, %half : index
      %y0 = affine.apply affine_map<(d0)[s0] -> (s0 + {chunk}*d0)>(%i)[%y]
      %y1 = arith.addi %y0, %half : index
      sdscbundle.sdsc_execute (%x0, %x1, %y0, %y1) {{sdsc_filename="sdsc_0.json", symbol_ids=[-1, -2, -3, -4]}}
      sdscbundle.sdsc_execute (%y0, %x0) {{sdsc_filename="sdsc_1.json", symbol_ids=[-1, -2]}}
    }}
    sdscbundle.sdsc_execute (%x, %y) {{sdsc_filename="sdsc_1.json", symbol_ids=[-1, -2]}}
    return
  }}
}}
""")
    lowered = lower_path(d)  # verified: every use is dominated by its definition
    assert lowered.text.count("scf.if %in_1") == 2 and lowered.text.count("%token = arith.constant") == 1
    xs = RNG.uniform(-2, 2, (2, 32, 64)).astype(np.float16)
    r = run(lowered.text, func="sdsc_bundle", args={"x_base": xs.copy().reshape(-1), "y_base": np.zeros(2 * 32 * 64, np.float16)})
    # per chunk: y = -x, then x = y; finally y[chunk 0] = x[chunk 0] = -x0
    np.testing.assert_array_equal(r.outputs["x_base"].reshape(2, 32, 64), -xs)
    np.testing.assert_array_equal(r.outputs["y_base"].reshape(2, 32, 64), -xs)
