"""Dense constants written as MLIR's hex blobs (mlir-opt prints constants of more than 100
elements that way): element bytes little-endian, i1 bit-packed, one element for a splat."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import reference_interp as ri
from ktir.builder import Builder
from ktir.ir import types as ty

from .helpers import run


def _constant(literal: str, ty: str) -> str:
    return f"func.func @f() -> {ty} {{\n  %0 = arith.constant {literal} : {ty}\n  return %0 : {ty}\n}}\n"


@pytest.mark.parametrize(("literal", "ty", "want"), [
    # MLIR: one bit per element, least significant bit first (0x05 0x02: elements 0, 2 and 9)
    ('dense<"0x0502">', "tensor<10xi1>", [1, 0, 1, 0, 0, 0, 0, 0, 0, 1]),
    ('dense<"0x01">', "tensor<3xi1>", [1, 0, 0]),
    # one byte 0xFF / 0x00 is a splat
    ('dense<"0xFF">', "tensor<10xi1>", [1] * 10),
    ('dense<"0x00">', "tensor<12xi1>", [0] * 12),
    ('dense<"0x0000803F00000040">', "tensor<2xf32>", [1.0, 2.0]),
    ('dense<"0x0000803F">', "tensor<3xf32>", [1.0, 1.0, 1.0]),
    ('dense<"0x0700F9FF">', "tensor<2xi16>", [7, -7]),
])
def test_hex_blob_reads_as_mlir_reads_it(literal: str, ty: str, want: list[float]) -> None:
    (value,) = run(_constant(literal, ty)).returns[0]
    np.testing.assert_array_equal(np.asarray(value).astype(np.float64), np.asarray(want, np.float64))


def test_i1_blob_of_many_elements() -> None:
    bits = np.arange(200) % 3 != 0
    blob = "0x" + np.packbits(bits, bitorder="little").tobytes().hex().upper()
    (value,) = run(_constant(f'dense<"{blob}">', "tensor<200xi1>")).returns[0]
    np.testing.assert_array_equal(value, bits)


def test_a_blob_of_the_wrong_size_is_a_diagnostic_not_a_crash() -> None:
    with pytest.raises(ri.KtirRuntimeError, match="not a whole number of 4-byte elements"):
        run(_constant('dense<"0x0000803F0000">', "tensor<3xf32>"))
    with pytest.raises(ri.KtirRuntimeError, match="one bit per element"):
        run(_constant('dense<"0x010203">', "tensor<10xi1>"))


@pytest.mark.parametrize("blob", ["0x0000803F0p000040", "0x0000803F0000004", "0x", "12"])
def test_a_blob_that_is_not_hex_bytes_is_a_syntax_error(blob: str) -> None:
    """MLIR: "expected string containing hex digits starting with `0x`" (the interpreter
    raised a ValueError from bytes.fromhex on the first one, found by the fuzzing lane)."""
    import ktir

    with pytest.raises(ktir.ParseError) as info:
        ktir.parse(_constant(f'dense<"{blob}">', "tensor<2xf32>"))
    d = info.value.diagnostics[0]
    assert (d.line, d.column) == (2, 29) and "hex blob" in d.message


def test_the_interpreter_reports_a_bad_blob_built_in_python() -> None:
    import ktir
    from ktir.ir import attributes as at

    module = ktir.parse(_constant('dense<"0x0000803F00000040">', "tensor<2xf32>"))
    op = module.operations[0].regions[0].blocks[0].operations[0]
    op.attributes["value"] = op.attributes["value"].model_copy(update={"hex": "0xZZ"})
    assert isinstance(op.attributes["value"], at.DenseAttr)
    with pytest.raises(ri.KtirRuntimeError, match="not bytes of two hex digits"):
        ri.run(module)


@pytest.mark.parametrize(("value", "want"), [(1.0e10, np.inf), (-1.0e10, -np.inf), (65504.0, 65504.0)])
def test_a_float_literal_beyond_the_type_is_an_infinity_without_a_warning(value: float, want: float) -> None:
    """As MLIR's parser rounds it (`arith.constant 1.0e10 : f16` prints as 0x7C00); numpy's
    'overflow encountered in cast' warning reached the user's terminal."""
    b = Builder()
    with b.func("f", [], results=[ty.F16]):
        b.func_return(b.constant(value, ty.F16))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (got,) = ri.run(b.module).returns[0]
    assert got.dtype == np.float16 and got == np.float16(want)
