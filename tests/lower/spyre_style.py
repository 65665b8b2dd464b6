"""Bundles written the way torch-spyre's Inductor backend writes them (FORMAT.md §10), built
here from the format's rules (synth.py), not copied from its captures:

- a reduction (`sum`, `max`, `mean`) lists its output among its inputs (the accumulator), and
  reduces over the stick dim into a tensor of one element per stick (`scale_` -2);
- softmax is six steps chained through scratchpad (LX) tensors at non-zero offsets (2048,
  34816), four of them without operands (`sdscbundle.sdsc_execute ()`);
- HBM addresses are symbolic: one `symbol_id` per distinct start address, so cores whose
  slices start at the same element share one (the A and B operands of a matmul);
- fp32 tensors use 32-element sticks; grids of 8 cores as well as 32.

Each builder returns the bundle directory and a numpy oracle of its output."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .synth import T, core_table, sdsc, start_address, write

ROW = ["mb", "out"]  # layoutDimOrder_ of a row-major [mb, out] tensor: device [out/stick, mb, lanes]


def _bits_f16(value: float) -> int:
    """A constant's device bits in SEN169_FP16 (1-6-9, bias 31) for a power of two."""
    m, e = math.frexp(value)  # value = m 2^e, m in [0.5, 1)
    assert m == 0.5, "this helper encodes powers of two only"
    return (e - 1 + 31) << 9


@dataclass
class Writer:
    """The bundle.mlir of a symbolic bundle: input args, per-core addresses, one sdsc_execute per step."""

    directory: Path
    args: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    next_id: int = 1
    made: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)

    def arg(self, name: str) -> str:
        if name not in self.args:
            self.args.append(name)
            self.lines.append(f"%{name} = sdscbundle.input_arg_extract value from %{name}_base_addr"
                              " : !sdscbundle.input_arg<index> -> index")
        return name

    def _address(self, arg: str, offset: int) -> str:
        if offset == 0:
            return f"%{arg}"
        name = f"%{arg}_core_{offset}"
        if name not in self.made:
            self.made.add(name)
            self.lines.append(f"%{arg}_core_offset_{offset} = arith.constant {offset} : index")
            self.lines.append(f"{name} = arith.addi %{arg}, %{arg}_core_offset_{offset} : index")
        return name

    def symbolic(self, t: T, arg: str, n: dict[str, int], splits: dict[str, int], bound: list[tuple[str, int]],
                 order: Sequence[str] | None = None) -> T:
        """`t` at a symbolic address in bundle argument `arg`: one symbol id per distinct start."""
        self.arg(arg)
        per_core = {d: n[d] // splits.get(d, 1) for d in n}
        at_zero = replace(t, base=0, symbols=None)
        ids: dict[int, int] = {}
        symbols = []
        for row in core_table(n, splits, order):
            offset = start_address(at_zero, n, per_core, row)
            if offset not in ids:
                ids[offset] = -self.next_id
                self.next_id += 1
                bound.append((self._address(arg, offset), ids[offset]))
            symbols.append(ids[offset])
        return replace(t, symbols=symbols)

    def step(self, doc: dict[str, Any], bound: Sequence[tuple[str, int]]) -> None:
        index = len(self.steps)
        write(self.directory / f"sdsc_{index}.json", doc)
        operands = ", ".join(a for a, _ in bound)
        ids = ", ".join(str(i) for _, i in bound)
        self.steps.append(f'sdscbundle.sdsc_execute ({operands}) {{sdsc_filename="sdsc_{index}.json", "symbol_ids"=[{ids}]}}')

    def finish(self) -> Path:
        params = ", ".join(f"%{a}_base_addr: !sdscbundle.input_arg<index>" for a in self.args)
        body = "\n    ".join([*self.lines, *self.steps, "return"])
        (self.directory / "bundle.mlir").write_text(f"module {{\n  func.func @sdsc_bundle({params}) {{\n    {body}\n  }}\n}}\n")
        return self.directory


def _reduction(doc: dict[str, Any]) -> dict[str, Any]:
    """torch-spyre's convention: the reduction's output is also named among its inputs."""
    (body,) = doc.values()
    (dsc,) = body["dscs_"][0].values()
    op = dsc["computeOp_"][0]
    op["inputLabeledDs"] = [*op["inputLabeledDs"], *op["outputLabeledDs"]]
    return doc


def _mean_constant(n_out: int) -> dict[str, int]:
    return {"scaling_factor": _bits_f16(1.0 / n_out)}


@dataclass
class Case:
    directory: Path
    inputs: dict[str, tuple[tuple[int, ...], str]]  # bundle arg -> (logical shape, dtype)
    output: str
    oracle: Callable[..., np.ndarray]
    to_device: Callable[[str, np.ndarray], np.ndarray]
    from_device: Callable[[np.ndarray], np.ndarray]
    fixed: dict[str, np.ndarray] = field(default_factory=dict)  # device arrays of given value (a constant)


def _row_device(x: np.ndarray, stick: int) -> np.ndarray:
    """[mb, out] -> device [out/stick, mb, stick] (layout [mb, out], stick out), flat."""
    mb, out = x.shape
    return np.ascontiguousarray(x.reshape(mb, out // stick, stick).transpose(1, 0, 2)).reshape(-1)


def _row_logical(flat: np.ndarray, mb: int, out: int, stick: int) -> np.ndarray:
    return flat.reshape(out // stick, mb, stick).transpose(1, 0, 2).reshape(mb, out)


def _t(scale: list[int], role: str, fmt: str = "SEN169_FP16", stick: int = 64, **kw: Any) -> T:
    return T("OUTPUT", ROW, "out", scale, role, fmt=fmt, stick_size=stick, **kw)


def _sparse(flat: np.ndarray, mb: int, stick: int) -> np.ndarray:
    """A [mb] result stored one element per stick (lane 0): device [1, mb, stick]."""
    return flat.reshape(mb, stick)[:, 0]


def reduction(directory: Path, op: str, *, mb: int = 64, out: int = 128, cores: int = 8) -> Case:
    """x [mb, out] in HBM -> op over out -> y [mb] (one element per stick) in HBM, one step."""
    n, splits = {"mb": mb, "out": out}, {"mb": cores}
    w = Writer(directory)
    bound: list[tuple[str, int]] = []
    x = w.symbolic(_t([1, 1], "in"), "arg_0", n, splits, bound)
    y = w.symbolic(_t([1, -2], "out"), "arg_1", n, splits, bound)
    constants = _mean_constant(out) if op == "mean" else None
    w.step(_reduction(sdsc(f"0_{op}", op, n, splits, [x, y], constants=constants)), bound)
    fns: dict[str, Callable[[np.ndarray], np.ndarray]] = {"sum": lambda a: a.sum(1), "max": lambda a: a.max(1),
                                                          "mean": lambda a: a.mean(1)}
    return Case(w.finish(), {"arg_0_base_addr": ((mb, out), "float16")}, "arg_1_base_addr",
                lambda x: fns[op](x.astype(np.float32)),
                lambda _name, a: _row_device(a, 64),
                lambda flat: _sparse(flat, mb, 64))


def softmax(directory: Path, *, mb: int = 64, out: int = 128, cores: int = 8) -> Case:
    """Six steps as torch-spyre writes softmax: identity HBM -> LX, max, sub, exp, sum, realdiv
    LX -> HBM, the four in between with no operands, the row in LX at 2048, the shifted row at
    2048 + the row's bytes (34816 for 16 rows of 1024 f16 on each core, as in the captures)."""
    n, splits = {"mb": mb, "out": out}, {"mb": cores}
    rows = mb // cores
    x_lx, stat_lx = 2048, 0
    shifted_lx = x_lx + rows * out * 2
    w = Writer(directory)
    bound: list[tuple[str, int]] = []
    x = w.symbolic(_t([1, 1], "in"), "arg_0", n, splits, bound)
    w.step(sdsc("0_identity", "identity", n, splits, [x, _t([1, 1], "out", space="lx", base=x_lx)]), bound)
    row_in = _t([1, 1], "in", space="lx", base=x_lx)
    stat_out, stat_in = _t([1, -2], "out", space="lx", base=stat_lx), _t([1, -2], "in", space="lx", base=stat_lx)
    w.step(_reduction(sdsc("1_max", "max", n, splits, [row_in, stat_out])), [])
    w.step(sdsc("2_sub", "sub", n, splits, [row_in, stat_in, _t([1, 1], "out", space="lx", base=shifted_lx)]), [])
    w.step(sdsc("3_exp", "exp", n, splits, [_t([1, 1], "in", space="lx", base=shifted_lx),
                                            _t([1, 1], "out", space="lx", base=x_lx)]), [])
    w.step(_reduction(sdsc("4_sum", "sum", n, splits, [row_in, stat_out])), [])
    bound = []
    y = w.symbolic(_t([1, 1], "out"), "arg_1", n, splits, bound)
    w.step(sdsc("5_realdiv", "realdiv", n, splits, [row_in, stat_in, y]), bound)

    def oracle(a: np.ndarray) -> np.ndarray:
        e = np.exp(a.astype(np.float32) - a.astype(np.float32).max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    return Case(w.finish(), {"arg_0_base_addr": ((mb, out), "float16")}, "arg_1_base_addr", oracle,
                lambda _name, a: _row_device(a, 64), lambda flat: _row_logical(flat, mb, out, 64))


def rms_norm(directory: Path, *, mb: int = 64, out: int = 128, cores: int = 8, eps: float = 2.0 ** -10) -> Case:
    """RMSNorm y = x / sqrt(mean(x^2) + eps) * w in the steps torch-spyre decomposes it into:
    mul, mean (output among inputs, its scaling_factor), add of eps (one stick in HBM,
    broadcast over rows and lanes), rsqrt, mul by the per-row statistic, mul by the weight
    (broadcast over rows); the intermediates in LX."""
    n, splits = {"mb": mb, "out": out}, {"mb": cores}
    rows = mb // cores
    sq_lx, stat_lx, norm_lx = 4096, 0, 4096 + rows * out * 2
    w = Writer(directory)
    bound: list[tuple[str, int]] = []
    x = w.symbolic(_t([1, 1], "in"), "arg_0", n, splits, bound)
    sq_out, sq_in = _t([1, 1], "out", space="lx", base=sq_lx), _t([1, 1], "in", space="lx", base=sq_lx)
    w.step(sdsc("0_mul", "mul", n, splits, [x, x, sq_out]), bound)
    stat_out, stat_in = _t([1, -2], "out", space="lx", base=stat_lx), _t([1, -2], "in", space="lx", base=stat_lx)
    w.step(_reduction(sdsc("1_mean", "mean", n, splits, [sq_in, stat_out], constants=_mean_constant(out))), [])
    bound = []
    e = w.symbolic(_t([-1, -2], "in"), "arg_1", n, splits, bound)
    w.step(sdsc("2_add", "add", n, splits, [stat_in, e, stat_out]), bound)
    w.step(sdsc("3_rsqrt", "rsqrt", n, splits, [stat_in, stat_out]), [])
    bound = []
    x2 = w.symbolic(_t([1, 1], "in"), "arg_0", n, splits, bound)
    w.step(sdsc("4_mul", "mul", n, splits, [x2, stat_in, _t([1, 1], "out", space="lx", base=norm_lx)]), bound)
    bound = []
    weight = w.symbolic(_t([-1, 1], "in"), "arg_2", n, splits, bound)
    y = w.symbolic(_t([1, 1], "out"), "arg_3", n, splits, bound)
    w.step(sdsc("5_mul", "mul", n, splits, [_t([1, 1], "in", space="lx", base=norm_lx), weight, y]), bound)

    def oracle(a: np.ndarray, wt: np.ndarray) -> np.ndarray:
        a32 = a.astype(np.float32)
        return a32 / np.sqrt((a32 * a32).mean(1, keepdims=True) + eps) * wt.astype(np.float32)[None, :]

    def to_dev(name: str, a: np.ndarray) -> np.ndarray:
        if name == "arg_2_base_addr":  # the weight: one row of sticks, device [out/64, 1, 64]
            return np.ascontiguousarray(a.astype(np.float16)).reshape(-1)
        return _row_device(a, 64)

    # eps: one stick in HBM, every lane holding it (the op reads lane 0)
    return Case(w.finish(), {"arg_0_base_addr": ((mb, out), "float16"), "arg_2_base_addr": ((out,), "float16")},
                "arg_3_base_addr", oracle, to_dev, lambda flat: _row_logical(flat, mb, out, 64),
                fixed={"arg_1_base_addr": np.full(64, eps, np.float16)})


def unary(directory: Path, op: str, *, fmt: str = "SEN169_FP16", mb: int = 64, out: int = 128, cores: int = 8) -> Case:
    """One elementwise step, in f16 (64-element sticks) or fp32 (`IEEE_FP32`, 32-element sticks)."""
    stick = 32 if fmt == "IEEE_FP32" else 64
    dtype = "float32" if fmt == "IEEE_FP32" else "float16"
    n, splits = {"mb": mb, "out": out}, {"mb": cores}
    w = Writer(directory)
    bound: list[tuple[str, int]] = []
    x = w.symbolic(_t([1, 1], "in", fmt=fmt, stick=stick), "arg_0", n, splits, bound)
    y = w.symbolic(_t([1, 1], "out", fmt=fmt, stick=stick), "arg_1", n, splits, bound)
    w.step(sdsc(f"0_{op}", op, n, splits, [x, y]), bound)
    erf = np.vectorize(math.erf)
    fns: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "gelufwd": lambda a: 0.5 * a * (1 + erf(a / np.sqrt(2))),
        "exp": np.exp,
    }
    return Case(w.finish(), {"arg_0_base_addr": ((mb, out), dtype)}, "arg_1_base_addr",
                lambda a: fns[op](a.astype(np.float64)), lambda _name, a: _row_device(a, stick),
                lambda flat: _row_logical(flat, mb, out, stick))


def matmul(directory: Path, *, m: int = 64, nn: int = 128, k: int = 64, split_m: int = 2, split_n: int = 2) -> Case:
    """C = A B on split_m x split_n cores: A's slices depend on mb only and B's on out only, so
    cores share their symbols (as in torch-spyre's mm capture: 8 A addresses, 4 B, 32 C)."""
    n, splits = {"mb": m, "out": nn, "in": k}, {"mb": split_m, "out": split_n}
    w = Writer(directory)
    bound: list[tuple[str, int]] = []
    a = w.symbolic(T("INPUT", ["in", "mb"], "in", [1, 1], "in"), "arg_0", {"mb": m, "out": nn, "in": k}, splits, bound)
    b = w.symbolic(T("KERNEL", ["out", "in"], "out", [1, 1], "in"), "arg_1", n, splits, bound)
    c = w.symbolic(T("OUTPUT", ["out", "mb"], "out", [1, 1], "out"), "arg_2", n, splits, bound)
    _fix_scales(a, b, c)
    w.step(sdsc("0_batchmatmul", "batchmatmul", n, splits, [a, b, c], ex_unit="pt"), bound)

    def a_dev(x: np.ndarray) -> np.ndarray:  # layout [in, mb] stick in: device [mb, in/64, 64]
        return np.ascontiguousarray(x.reshape(m, k // 64, 64)).reshape(-1)

    def b_dev(x: np.ndarray) -> np.ndarray:  # layout [out, in] stick out: device [in, out/64, 64]
        return np.ascontiguousarray(x.reshape(k, nn // 64, 64)).reshape(-1)

    return Case(w.finish(), {"arg_0_base_addr": ((m, k), "float16"), "arg_1_base_addr": ((k, nn), "float16")},
                "arg_2_base_addr", lambda x, y: x.astype(np.float32) @ y.astype(np.float32),
                lambda name, x: a_dev(x) if name == "arg_0_base_addr" else b_dev(x),
                lambda flat: flat.reshape(m, nn // 64, 64).reshape(m, nn))


def _fix_scales(*tensors: T) -> None:
    """synth's T takes scale_ per layout dim; the matmul tensors span all their dims."""
    for t in tensors:
        assert all(s == 1 for s in t.scale)
