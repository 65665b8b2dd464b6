"""Op functions and layouts beyond the five samples, on synthetic SDSCs shaped like torch-spyre's
(tests/lower/synth.py): each lowers to valid KTIR and matches numpy in reference_interp."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from ktir.lower import SdscError, lower_sdsc, parse_sdsc
from ktir.lower.emit import radix_slices
from ktir.lower.layout import build_kernel
from ktir.verify import validate_text

from .interp import run
from .stick import from_device
from .synth import T, device, sdsc

RNG = np.random.default_rng(7)
N = {"mb": 64, "out": 128}
SPLITS = {"mb": 4}


def _lower(doc: dict[str, Any]) -> str:
    lowered = lower_sdsc(parse_sdsc(doc, "synthetic.json"))
    _, diagnostics = validate_text(lowered.text)
    assert not [d for d in diagnostics if d.severity != "note"], diagnostics
    return lowered.text


def pointwise(label: str = "OUTPUT", role: str = "in", scale: list[int] | None = None, base: int = 0) -> T:
    # layoutDimOrder_ [out, mb] (innermost first), stick out: device [mb, out/64, 64]
    return T(label, ["out", "mb"], "out", scale or [1, 1], role, base=base)


F32 = np.float32

UNARY: dict[str, tuple[Callable[[np.ndarray], np.ndarray], tuple[float, float]]] = {
    "exp": (np.exp, (-3, 3)),
    "log": (np.log, (0.1, 4)),
    "sqrt": (np.sqrt, (0, 4)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.1, 4)),
    "tanh": (np.tanh, (-3, 3)),
    "abs": (np.abs, (-3, 3)),
    "neg": (np.negative, (-3, 3)),
    "floor": (np.floor, (-3, 3)),
    "reciprocal": (lambda x: 1 / x, (0.5, 4)),
    "relufwd": (lambda x: np.maximum(x, 0), (-3, 3)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-4, 4)),
    "silu": (lambda x: x / (1 + np.exp(-x)), (-4, 4)),
}


@pytest.mark.parametrize("opfunc", sorted(UNARY))
def test_unary(opfunc: str) -> None:
    fn, (lo, hi) = UNARY[opfunc]
    x_t, y_t = pointwise(), pointwise(role="out", base=1 << 20)
    text = _lower(sdsc(f"0_{opfunc}", opfunc, N, SPLITS, [x_t, y_t]))
    x = RNG.uniform(lo, hi, (64, 128)).astype(np.float16)
    r = run(text, args={"Tensor0": device(x, ["mb", "out"], x_t), "Tensor1": np.zeros((64, 2, 64), np.float16)})
    y = from_device(r.outputs["Tensor1"], ["mb", "out"], y_t.layout, y_t.stick)
    np.testing.assert_allclose(y.astype(F32), fn(x.astype(F32)), rtol=4e-3, atol=1e-3)


BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "realdiv": np.divide, "maximum": np.maximum, "minimum": np.minimum,
}


@pytest.mark.parametrize("opfunc", sorted(BINARY))
def test_binary_with_a_row_broadcast(opfunc: str) -> None:
    """z[mb, out] = x[mb, out] op y[out]: y has scale -1 on mb (one row for every core)."""
    x_t, y_t, z_t = pointwise(), pointwise(scale=[1, -1], base=1 << 20), pointwise(role="out", base=2 << 20)
    text = _lower(sdsc(f"0_{opfunc}", opfunc, N, SPLITS, [x_t, y_t, z_t]))
    x = RNG.uniform(-2, 2, (64, 128)).astype(np.float16)
    y = RNG.uniform(0.5, 2, (1, 128)).astype(np.float16)
    r = run(text, args={"Tensor0": device(x, ["mb", "out"], x_t), "Tensor1": device(y, ["mb", "out"], y_t),
                        "Tensor2": np.zeros((64, 2, 64), np.float16)})
    z = from_device(r.outputs["Tensor2"], ["mb", "out"], z_t.layout, z_t.stick)
    np.testing.assert_allclose(z.astype(F32), BINARY[opfunc](x, y).astype(F32), rtol=2e-3, atol=1e-3)


def test_binary_with_a_stick_broadcast() -> None:
    """z[mb, out] = x[mb, out] * y[mb]: y has scale -2 on the stick dim (lane 0 of one stick per row)."""
    x_t, y_t, z_t = pointwise(), pointwise(scale=[-2, 1], base=1 << 20), pointwise(role="out", base=2 << 20)
    text = _lower(sdsc("0_mul", "mul", N, SPLITS, [x_t, y_t, z_t]))
    x = RNG.uniform(-2, 2, (64, 128)).astype(np.float16)
    y_dev = RNG.uniform(-2, 2, (64, 1, 64)).astype(np.float16)  # lanes 1..63 are padding, never read
    r = run(text, args={"Tensor0": device(x, ["mb", "out"], x_t), "Tensor1": y_dev, "Tensor2": np.zeros((64, 2, 64), np.float16)})
    z = from_device(r.outputs["Tensor2"], ["mb", "out"], z_t.layout, z_t.stick)
    np.testing.assert_array_equal(z, x * y_dev[:, :, :1].reshape(64, 1))


def test_binary_with_operands_in_different_stick_layouts() -> None:
    """y is stored transposed (stick mb): the op runs on logical tiles."""
    n, splits = {"mb": 128, "out": 128}, {"mb": 2}  # whole sticks of mb per core
    x_t, z_t = pointwise(), pointwise(role="out", base=2 << 20)
    y_t = T("KERNEL", ["mb", "out"], "mb", [1, 1], "in", base=1 << 20)  # device [out, mb/64, 64]
    text = _lower(sdsc("0_sub", "sub", n, splits, [x_t, y_t, z_t]))
    assert "linalg.transpose" in text
    x = RNG.uniform(-2, 2, (128, 128)).astype(np.float16)
    y = RNG.uniform(-2, 2, (128, 128)).astype(np.float16)
    r = run(text, args={"Tensor0": device(x, ["mb", "out"], x_t), "Tensor1": device(y, ["mb", "out"], y_t),
                        "Tensor2": np.zeros((128, 2, 64), np.float16)})
    np.testing.assert_array_equal(from_device(r.outputs["Tensor2"], ["mb", "out"], z_t.layout, z_t.stick), x - y)


def test_sum_over_the_stick_dim_writes_one_element_per_stick() -> None:
    x_t, y_t = pointwise(), pointwise(role="out", scale=[-2, 1], base=1 << 20)
    text = _lower(sdsc("0_sum", "sum", N, SPLITS, [x_t, y_t]))
    x = RNG.uniform(-1, 1, (64, 128)).astype(np.float16)
    out = np.full((64, 1, 64), 7, np.float16)
    r = run(text, args={"Tensor0": device(x, ["mb", "out"], x_t), "Tensor1": out})
    got = r.outputs["Tensor1"]
    np.testing.assert_allclose(got[:, 0, 0].astype(F32), x.astype(F32).sum(axis=1), rtol=1e-2, atol=2e-2)
    assert (got[:, 0, 1:] == 7).all()  # the other lanes are left alone


def test_max_over_a_non_stick_dim() -> None:
    """maxnonstick over mb (unsplit): y[out] = max_mb x[mb, out], split over out."""
    n, splits = {"mb": 64, "out": 256}, {"out": 2}
    x_t, y_t = pointwise(), pointwise(role="out", scale=[1, -1], base=1 << 20)
    text = _lower(sdsc("0_maxnonstick", "maxnonstick", n, splits, [x_t, y_t]))
    x = RNG.uniform(-3, 3, (64, 256)).astype(np.float16)
    r = run(text, args={"Tensor0": device(x, ["mb", "out"], x_t), "Tensor1": np.zeros((1, 4, 64), np.float16)})
    np.testing.assert_array_equal(r.outputs["Tensor1"].reshape(-1), x.max(axis=0))


def test_mean_scales_by_its_constant() -> None:
    x_t, y_t = pointwise(), pointwise(role="out", scale=[-2, 1], base=1 << 20)
    # scaling_factor = 1/128 = 2^-7 in SEN169_FP16: exponent 24 (bias 31), mantissa 0
    text = _lower(sdsc("0_mean", "mean", N, SPLITS, [x_t, y_t], constants={"scaling_factor": 24 << 9}))
    x = RNG.uniform(-1, 1, (64, 128)).astype(np.float16)
    r = run(text, args={"Tensor0": device(x, ["mb", "out"], x_t), "Tensor1": np.zeros((64, 1, 64), np.float16)})
    np.testing.assert_allclose(r.outputs["Tensor1"][:, 0, 0].astype(F32), x.astype(F32).mean(axis=1), atol=2e-3)


@pytest.mark.parametrize("order", [None, ["out", "mb"], "table"])
def test_restickify_with_core_orders(order: Any) -> None:
    """Cores take slices in N_ order, K-style (out fastest), or by an arbitrary table."""
    n, splits = {"mb": 128, "out": 256}, {"mb": 2, "out": 4}
    a = T("OUTPUT", ["mb", "out"], "out", [1, 1], "in")  # device [out/64, mb, 64]
    b = T("KERNEL", ["out", "mb"], "mb", [1, 1], "out", base=1 << 24)  # device [mb/64, out, 64]
    doc = sdsc("7_ReStickifyOpHBM", "ReStickifyOpHBM", n, splits, [a, b], order=None if order == "table" else order)
    if order == "table":  # reverse the core numbering: not a mixed-radix order any more
        _renumber(doc, lambda c: 7 - c)
    kernel = build_kernel(parse_sdsc(doc))
    assert (radix_slices(kernel) is None) == (order == "table")
    text = _lower(doc)
    x = RNG.standard_normal((128, 256)).astype(np.float16)
    r = run(text, args={"Tensor0": device(x, ["mb", "out"], a), "Tensor1": np.zeros((2, 256, 64), np.float16)})
    np.testing.assert_array_equal(from_device(r.outputs["Tensor1"], ["mb", "out"], b.layout, b.stick), x)


@pytest.mark.parametrize(("opfunc", "fmt", "dtype"), [("identity", "IEEE_FP32", np.float32), ("ReStickifyOpHBM", "IEEE_INT32", np.int32)])
def test_data_movement_in_32_bit_formats(opfunc: str, fmt: str, dtype: Any) -> None:
    """32 elements per 128-byte stick; the copy changes the stick dim."""
    n, splits = {"mb": 64, "out": 64}, {"out": 2}
    a = T("OUTPUT", ["out", "mb"], "out", [1, 1], "in", fmt=fmt, stick_size=32)  # device [mb, out/32, 32]
    b = T("KERNEL", ["out", "mb"], "mb", [1, 1], "out", base=1 << 20, fmt=fmt, stick_size=32)  # device [mb/32, out, 32]
    text = _lower(sdsc(f"0_{opfunc}", opfunc, n, splits, [a, b]))
    x = RNG.integers(-1000, 1000, (64, 64)).astype(dtype)
    r = run(text, args={"Tensor0": device(x, ["mb", "out"], a), "Tensor1": np.zeros_like(device(x, ["mb", "out"], b))})
    np.testing.assert_array_equal(from_device(r.outputs["Tensor1"], ["mb", "out"], b.layout, b.stick), x)


def _renumber(doc: dict[str, Any], new: Callable[[int], int]) -> None:
    (body,) = doc.values()
    body["coreIdToWkSlice_"] = {str(new(int(c))): v for c, v in body["coreIdToWkSlice_"].items()}
    (dsc,) = body["dscs_"][0].values()
    for node in dsc["scheduleTree_"]:
        data = node["startAddressCoreCorelet_"]["data_"]
        node["startAddressCoreCorelet_"]["data_"] = {f"[{new(int(k[1:].split(',')[0]))}, 0, 0]": v for k, v in data.items()}


def _matmul_tensors(batch: list[str]) -> list[T]:
    # A [.., mb, in] stick in; B [.., in, out] stick out; C [.., mb, out] stick out (innermost first below)
    return [
        T("INPUT", ["in", "mb", *batch], "in", [1] * (2 + len(batch)), "in"),
        T("KERNEL", ["out", "in", *batch], "out", [1] * (2 + len(batch)), "in", base=1 << 24),
        T("OUTPUT", ["out", "mb", *batch], "out", [1] * (2 + len(batch)), "out", base=2 << 24),
    ]


@pytest.mark.parametrize("batch", [["x"], ["y", "x"]])
def test_batched_matmul(batch: list[str]) -> None:
    n = {**{d: 2 for d in batch}, "mb": 32, "out": 128, "in": 128}
    splits = {batch[0]: 2, "mb": 2}
    a_t, b_t, c_t = _matmul_tensors(batch)
    text = _lower(sdsc("0_batchmatmul", "batchmatmul", n, splits, [a_t, b_t, c_t], ex_unit="pt"))
    assert ("linalg.batch_matmul" in text) == (len(batch) == 1)
    bs = (2,) * len(batch)
    a = RNG.uniform(-1, 1, (*bs, 32, 128)).astype(np.float16)
    b = RNG.uniform(-1, 1, (*bs, 128, 128)).astype(np.float16)
    r = run(text, args={
        "Tensor0": device(a, [*batch, "mb", "in"], a_t),
        "Tensor1": device(b, [*batch, "in", "out"], b_t),
        "Tensor2": np.zeros(device(np.zeros((*bs, 32, 128), np.float16), [*batch, "mb", "out"], c_t).shape, np.float16),
    })
    c = from_device(r.outputs["Tensor2"], [*batch, "mb", "out"], c_t.layout, c_t.stick)
    np.testing.assert_allclose(c.astype(F32), np.matmul(a.astype(F32), b.astype(F32)), rtol=2e-2, atol=3e-2)


def test_a_k_split_matmul_is_refused_with_a_reason() -> None:
    doc = sdsc("0_batchmatmul", "batchmatmul", {"mb": 32, "out": 128, "in": 128}, {"in": 2}, _matmul_tensors([]), ex_unit="pt")
    with pytest.raises(SdscError, match="reduced dim 'in' is split across 2 cores; .*inter-tile reduction"):
        lower_sdsc(parse_sdsc(doc))


@pytest.mark.parametrize("opfunc", ["where3", "equal", "layernormscale"])
def test_an_unsupported_opfunc_is_named(opfunc: str) -> None:
    doc = sdsc(f"0_{opfunc}", opfunc, N, SPLITS, [pointwise(), pointwise(role="out", base=1 << 20)])
    with pytest.raises(SdscError, match=rf"opFuncName: op function '{opfunc}' is not supported \(supported: .*add"):
        lower_sdsc(parse_sdsc(doc))
