"""`--random-inputs` with a size argument no view explains (a row count, a page count): the
smallest of 1, 2, 4, ... with which the kernel runs on the drawn inputs, announced in a note;
a kernel no size runs is one located error naming the argument."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ktir.cli import main
from ktir.syntax.parser import parse
from reference_interp.inputs import infer_args

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name: str):  # type: ignore[no-untyped-def]
    path = EXAMPLES / name
    return parse(path.read_text(), str(path))


def test_softmax_rows_take_the_smallest_size_that_runs(capsys: pytest.CaptureFixture[str]) -> None:
    notes: list[str] = []
    args = infer_args(_load("softmax.ktir"), None, {}, 0, {}, notes=notes)
    # the grid's 32 tiles each start a 32-row block: R < 32 leaves tile 0's block outside the rows
    assert args["R"] == 32 and args["x_ptr"].size == 32 * 1024
    # the rows are a dynamic view size read by a tile 32 rows high: that is the value taken
    assert notes == ["R = 32: a dynamic size of dimension 0 of a view read by an access tile 32 wide "
                     "(give --arg R=... for another value)"]
    assert main(["run", str(EXAMPLES / "softmax.ktir"), "--random-inputs"]) == 0
    assert "note: R = 32" in capsys.readouterr().err


def test_page_count_covers_the_random_block_table() -> None:
    # the block table's random page ids are below 8: fewer pages would make its gathers leave the
    # pool; the sizes searched together stop at 16, the fewest block-table columns a chunk reads
    args = infer_args(_load("paged_attention.ktir"), None, {}, 0, {})
    assert args["W"] == 16 and args["NP"] == 16 and int(np.max(args["bt_ptr"])) < 8


def test_a_given_size_is_kept() -> None:
    args = infer_args(_load("softmax.ktir"), None, {"R": 2048}, 0, {})
    assert args["R"] == 2048 and args["x_ptr"].size == 2048 * 1024


def test_no_size_that_runs_is_one_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a kernel that reads one element past its view for every size
    kernel = tmp_path / "past.ktir"
    kernel.write_text(
        "#all = affine_set<(d0)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0)>\n"
        "#one = affine_set<(d0) : (d0 >= 0, -d0 >= 0)>\n"
        "#id = affine_map<(d0) -> (d0)>\n"
        "func.func @past(%x_ptr: index, %n: index) {\n"
        "  %x = ktdp.construct_memory_view %x_ptr, sizes: [%n], strides: [1] {coordinate_set = #all, "
        "memory_space = #ktdp.memory_space<global>} : memref<?xf32>\n"
        "  %t = ktdp.construct_access_tile %x[%n] {access_tile_order = #id, access_tile_set = #one} : "
        "memref<?xf32> -> !ktdp.access_tile<1xindex>\n"
        "  %v = ktdp.load %t : !ktdp.access_tile<1xindex> -> tensor<1xf32>\n"
        "  return\n"
        "}\n")
    assert main(["run", str(kernel), "--random-inputs"]) == 1
    err = capsys.readouterr().err
    assert "cannot infer a value for argument n: no size of 1, 2, ... 16384 runs the kernel" in err, err
    assert "Traceback" not in err


def test_a_view_too_large_for_memory_is_that_error() -> None:
    """A stride of 2^32 makes the array 120 GB: the run stops with memory-limit (it was an
    AssertionError when the kernel had no size to infer: fuzz seed 63029, input 23622)."""
    from ktir.builder import Builder, box
    from ktir.ir import types as ty
    from reference_interp.errors import KtirRuntimeError

    b = Builder()
    with b.func("k", [("C", ty.INDEX), ("o", ty.INDEX)]) as (c, o):
        view = b.memory_view(c, [8], [1 << 32], ty.F32)
        b.access_tile(view, [o], box(4), [4])
        b.func_return()
    with pytest.raises(KtirRuntimeError) as e:
        infer_args(b.module, None, {}, 0, {})
    assert e.value.kind == "memory-limit"


@pytest.mark.parametrize("bound", ["9223372036854775807", "100000000"])
def test_an_indirect_variable_space_too_large_is_that_error(bound: str) -> None:
    """An indirect tile's variables_space_set of 2^63 x 4 points: np.indices raised a bare
    ValueError (`runtime.internal`, fuzz seed 55821, inputs 61331 and 120736); the run stops
    with memory-limit, as for any set too large to enumerate. The kernel is the repository's
    conformance case with its set's bound replaced."""
    from reference_interp.errors import KtirRuntimeError

    source = (Path(__file__).resolve().parents[2] / "conformance/cases/multi-tile/indirect.offset_subscripts.transposed.ktir")
    text = source.read_text()
    assert "-d0 + 7 >= 0, d1 >= 0, -d1 + 3 >= 0" in text
    module = parse(text.replace("-d0 + 7 >= 0, d1 >= 0, -d1 + 3 >= 0", f"-d0 + {bound} >= 0, d1 >= 0, -d1 + 3 >= 0"), "k.ktir")
    with pytest.raises(KtirRuntimeError) as e:
        infer_args(module, None, {}, 0, {})
    assert e.value.kind == "memory-limit"
