"""`check_equivalent` skips the arithmetic on arrays whose bytes are identical in both runs (an
input neither module writes: a 4096 x 14336 weight took seconds to compare as float64), and
still finds any array that differs, inputs included."""

from __future__ import annotations

import pytest

import ktir
from ktir.ir.operation import Module
from ktir.syntax.printer import print_module
from schedulers import single_tile as nat
from schedulers.check import _identical, check_equivalent


def double(dtype: str, clobber: bool = False, off: bool = False) -> Module:
    """y = x + x (times 2 when `off`); with `clobber` x is overwritten with y as well."""
    k = nat.Kernel("k", ["x", "y"])
    x = k.load(k.view("x", [8, 64], dtype))
    y = k.op("arith.addf", x, x)
    if off:
        y = k.op("arith.addf", y, y)
    k.store(y, k.view("y", [8, 64], dtype))
    if clobber:
        k.store(y, k.view("x", [8, 64], dtype))
    return ktir.parse(print_module(k.done()), "k.ktir")


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_the_same_kernel_matches_itself(dtype: str) -> None:
    verdict = check_equivalent(double(dtype), double(dtype))
    assert verdict.ok and verdict.max_abs_error == 0.0, verdict.message


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_an_input_written_by_the_schedule_is_found(dtype: str) -> None:
    verdict = check_equivalent(double(dtype), double(dtype, clobber=True))
    assert not verdict.ok and verdict.message.startswith("x"), verdict.message


def test_a_wrong_output_is_found() -> None:
    verdict = check_equivalent(double("f32"), double("f32", off=True))
    assert not verdict.ok and verdict.message.startswith("y"), verdict.message


def test_identical_means_same_type_shape_and_bytes() -> None:
    import numpy as np

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert _identical(a, a.copy()) and _identical(a.T, a.T.copy())
    assert not _identical(a, a.astype(np.float64)) and not _identical(a, a.reshape(3, 2))
    b = a.copy()
    b[1, 2] = np.nextafter(b[1, 2], np.float32(9))
    assert not _identical(a, b)
    assert not _identical(np.float32(-0.0) * np.ones(2, np.float32), np.zeros(2, np.float32))
