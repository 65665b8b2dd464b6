"""Arrays of another dtype than the kernel declares: converted when exact (and said so),
refused otherwise, the same in `ktir run --arg` and `ktir run-program --input`.

The decision is checked against an oracle that knows nothing of numpy's casts: a value is
exact in a float format when it is within range and a multiple of the format's spacing at
its magnitude (fractions), in an integer type when it is a whole number within range."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ktir.cli import main
from ktir.lower.torch.manifest import BufferEntry, KernelEntry, Manifest, StickLayout, TensorEntry
from reference_interp.conform import ArgumentTypeError, conform

ROOT = Path(__file__).resolve().parents[2]
VECTOR_ADD = ROOT / "examples" / "vector_add.ktir"  # A, B, C: index pointers to f16[N] views; N a multiple of 65,536
# a program binds buffers only, no sizes: its kernel is the corpus's fixed-size vector add (f16[4096])
FIXED_ADD = ROOT / "tests" / "corpus" / "kernels" / "vector_add.ktir"
SIZE = {"run": 65536, "run-program": 4096}

# significand bits (with the implicit one), smallest normal exponent, largest finite value
FLOATS = {"f16": (11, -14, 65504.0), "bf16": (8, -126, float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)),
          "f32": (24, -126, float(np.finfo(np.float32).max)), "f64": (53, -1022, float(np.finfo(np.float64).max))}
DTYPES = {"f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16), "f32": np.dtype(np.float32),
          "f64": np.dtype(np.float64), "i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "i32": np.dtype(np.int32),
          "i64": np.dtype(np.int64), "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16), "i1": np.dtype(np.bool_)}


def _exact_in(value: int | float, target: str) -> bool:
    """Whether `value` is a number of type `target` (an independent oracle: fractions)."""
    if isinstance(value, float) and math.isnan(value):
        return target in FLOATS
    if isinstance(value, float) and math.isinf(value):
        return target in FLOATS
    v = Fraction(value)
    if target == "i1":
        return v in (0, 1)
    if target in FLOATS:
        p, emin, top = FLOATS[target]
        if abs(v) > Fraction(top):
            return False
        if v == 0:
            return True
        # exact: 1/subnormal f64 overflows a float, so no log2 here
        e = abs(v).numerator.bit_length() - abs(v).denominator.bit_length()
        while Fraction(2) ** e > abs(v):
            e -= 1
        while Fraction(2) ** (e + 1) <= abs(v):
            e += 1
        step = Fraction(2) ** (max(e, emin) - p + 1)
        return (v / step).denominator == 1
    info = np.iinfo(DTYPES[target])
    return v.denominator == 1 and info.min <= v <= info.max


def _python(x: np.generic) -> int | float:
    return int(x) if isinstance(x, np.integer | np.bool_) else float(x)


@settings(max_examples=300, deadline=None)
@given(src=st.sampled_from(sorted(DTYPES)), dst=st.sampled_from(sorted(DTYPES)), data=st.data())
def test_conversion_is_accepted_exactly_when_every_value_survives(src: str, dst: str, data: st.DataObject) -> None:
    have = DTYPES[src]
    if have.kind == "f" or have.name == "bfloat16":
        values = data.draw(st.lists(st.one_of(st.floats(allow_nan=True, width=64), st.integers(-300, 300).map(float),
                                               st.sampled_from([0.5, -0.0, 2049.0, 1e-8, 65504.0, 65520.0])), min_size=1, max_size=6))
        with np.errstate(all="ignore"):
            array = np.array(values, np.float64).astype(have)
    else:
        info = np.iinfo(have) if have.kind in "iu" else None
        lo, hi = (int(info.min), int(info.max)) if info else (0, 1)
        array = np.array(data.draw(st.lists(st.one_of(st.integers(lo, hi), st.integers(max(lo, -300), min(hi, 300))),
                                            min_size=1, max_size=6)), have)
    want = all(_exact_in(_python(x), dst) for x in array)
    try:
        got, note = conform("x", array, DTYPES[dst], dst)
    except ArgumentTypeError as e:
        assert not want, f"{array!r} refused as {dst}: {e}"
        assert "would change" in str(e) or "cannot be read" in str(e)
        return
    assert want, f"{array!r} accepted as {dst} though some value changes: {got!r}"
    assert got.dtype == DTYPES[dst] and (note is None) == (src == dst)
    for a, b in zip(array, got, strict=True):
        x, y = _python(a), _python(b)
        assert (x == y) or (x != x and y != y), (a, b)


def test_big_endian_and_strings() -> None:
    big = np.arange(8, dtype=">f2")
    got, note = conform("A", big, np.dtype(np.float16), "f16")
    assert got.dtype == np.dtype("<f2") and np.array_equal(got, np.arange(8)) and note and "byte order" in note
    with pytest.raises(ArgumentTypeError, match="strings"):
        conform("A", np.array(["a"]), np.dtype(np.float16), "f16")


def _vector_add_files(tmp: Path, a: np.ndarray) -> list[str]:
    np.save(tmp / "a.npy", a)
    np.save(tmp / "b.npy", np.ones(len(a), np.float16))
    np.save(tmp / "c.npy", np.zeros(len(a), np.float16))
    return ["--arg", f"A={tmp / 'a.npy'}", "--arg", f"B={tmp / 'b.npy'}", "--arg", f"C={tmp / 'c.npy'}", "--arg", f"N={len(a)}"]


def _vector_add_program(tmp: Path) -> Path:
    """A one-kernel program (vector_add) with inputs a and b, written by hand."""
    n = SIZE["run-program"]
    (tmp / "p.ktir").write_text(FIXED_ADD.read_text())
    x, y, z = "x_ptr", "y_ptr", "out_ptr"  # the kernel's arguments, bound by name to the buffers
    layout = StickLayout(dim_order=[0], stick_dim=0, stick_elements=64, sticks=n // 64)
    buffers = [BufferEntry(name=v, kind="input" if v != z else "intermediate", dtype="f16", shape=[n], elements=n,
                           source=v, layout=layout, writers=["vector_add"] if v == z else []) for v in (x, y, z)]
    kernel = KernelEntry(name="vector_add", kind="elementwise", grid=[4], args=[x, y, z], reads=[x, y], writes=[z],
                         nodes=["add"], description="out = x + y")
    io = [TensorEntry(name=name, buffer=v, dtype="f16", offset=0, shape=[n], strides=[1]) for name, v in (("a", x), ("b", y))]
    out = [TensorEntry(name="c", buffer=z, dtype="f16", offset=0, shape=[n], strides=[1])]
    manifest = Manifest(program="p", target="spyre", cores=32, ktir="p.ktir", weights=None, buffers=buffers,
                        kernels=[kernel], inputs=io, outputs=out)
    (tmp / "p.manifest.json").write_text(manifest.to_json())
    np.save(tmp / "b.npy", np.ones(n, np.float16))
    return tmp / "p.manifest.json"


@pytest.mark.parametrize("command", ["run", "run-program"])
def test_a_wrong_dtype_is_converted_when_exact_and_refused_otherwise(command: str, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    def invoke(a: np.ndarray) -> tuple[int, Path]:
        out = tmp_path / f"out-{command}.npz"
        out.unlink(missing_ok=True)
        if command == "run":
            return main(["run", str(VECTOR_ADD), *_vector_add_files(tmp_path, a), "--out", str(out)]), out
        np.save(tmp_path / "a.npy", a)
        manifest = _vector_add_program(tmp_path)
        return main(["run-program", str(manifest), "--input", f"a={tmp_path / 'a.npy'}", "--input",
                     f"b={tmp_path / 'b.npy'}", "--out", str(out)]), out

    key = "C" if command == "run" else "c"
    n = SIZE[command]
    ramp = np.arange(n) % 1024  # every value exact in f16
    for exact in (ramp.astype(np.float32), ramp.astype(">f2"), ramp.astype(np.int32) - 512):
        code, out = invoke(exact)
        err = capsys.readouterr().err
        assert code == 0, err
        assert "note: argument" in err and "converted" in err, err
        with np.load(out) as data:
            np.testing.assert_array_equal(data[key], exact.astype(np.float64) + 1)
    for lossy in ((ramp.astype(np.float32) + 0.1), np.full(n, 70000.0), np.full(n, 2049, np.int32)):
        code, out = invoke(lossy)
        err = capsys.readouterr().err
        assert code == 2 and "would change" in err and "Traceback" not in err, err
        assert not out.exists()
