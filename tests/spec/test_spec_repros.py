"""The spec's claims checked against `ktir validate` / `ktir run` on the reproducers of
issue 20 (copied to tests/spec/repros/). Each test states the claim (spec page) it checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ktir
import reference_interp as ri
from ktir.cli import main
from ktir.verify import validate_text

REPROS = Path(__file__).parent / "repros"


def _module(name: str) -> ktir.Module:
    path = REPROS / name
    return ktir.parse(path.read_text(), str(path))


def _errors(name: str) -> list[Any]:
    path = REPROS / name
    _, diags = validate_text(path.read_text(), str(path))
    return [d for d in diags if d.severity == "error"]


def _fails(name: str, kind: str, line: int, **args: Any) -> ri.KtirRuntimeError:
    assert not _errors(name), f"{name} should be valid"
    with pytest.raises(ri.KtirRuntimeError) as info:
        ri.run(_module(name), args=args)
    err = info.value
    assert err.kind == kind, err.message
    assert err.diagnostics[0].id == f"runtime.{kind}"
    assert err.diagnostics[0].line == line, err.message
    return err


def test_t1_storing_tensor_empty_contents_is_always_detected() -> None:
    # execution.md, dynamic errors: the contents of tensor.empty deciding a stored value
    err = _fails("t1_empty_store.ktir", "undefined", 7, C=np.zeros(8, np.float32))
    assert "tensor.empty" in err.message
    out = ri.run(_module("t1_empty_store.ktir"), args={"C": np.ones(8, np.float32)}, strict=False)
    assert out.outputs["C"].tolist() == [0.0] * 8  # the documented lenient mode reads zeros


def test_t1_through_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c = tmp_path / "c.npy"
    np.save(c, np.zeros(8, np.float32))
    path = REPROS / "t1_empty_store.ktir"
    assert main(["run", str(path), "--arg", f"C={c}"]) == 1
    err = capsys.readouterr().err
    assert f"{path}:7:3: error[runtime.undefined]" in err
    assert main(["run", str(path), "--arg", f"C={c}", "--lenient"]) == 0


def test_t3_a_tile_whose_type_disagrees_with_its_set() -> None:
    # memory.md, access tiles: the shape is the set's extents in the order's permutation. The
    # verifier warns (the text is valid MLIR, upstream accepts it); running it is runtime.type,
    # a dynamic error class the spec lists.
    path = REPROS / "t3_shape.ktir"
    _, diags = validate_text(path.read_text(), str(path))
    assert [(d.severity, d.id, d.line) for d in diags] == [("warning", "ktdp.construct_access_tile.shape", 5)]
    with pytest.raises(ri.KtirRuntimeError) as info:
        ri.run(_module("t3_shape.ktir"), args={"C": np.zeros(16, np.float32)})
    assert info.value.kind == "type" and info.value.diagnostics[0].line == 5


def test_t6_a_reduce_identity_of_the_wrong_type_is_invalid() -> None:
    # ktdp.inter_tile_reduce.C6
    errors = _errors("invalid/t6_identity.ktir")  # under invalid/: the repository-wide validity test skips it
    assert [(d.id, d.line) for d in errors] == [("ktdp.inter_tile_reduce.C6", 8)]


def test_t27_a_delivery_result_on_a_non_consumer_is_undefined() -> None:
    # execution.md, participation: results are undefined on non-consumers
    err = _fails("t27_nonconsumer.ktir", "undefined", 16, O=np.zeros(8, np.float32))
    assert err.tile == 0 and "consumer" in err.message


def test_t11_duplicate_indirect_coordinates_are_a_store_conflict() -> None:
    err = _fails("t11_dup.ktir", "store-conflict", 8, C=np.zeros(8, np.float32), I=np.array([1, 1, 2, 3], np.int32))
    assert err.coordinate == (1,)
    # distinct coordinates store fine
    out = ri.run(_module("t11_dup.ktir"), args={"C": np.zeros(8, np.float32), "I": np.array([3, 1, 2, 0], np.int32)})
    assert out.outputs["C"].tolist() == [4.0, 2.0, 3.0, 1.0, 0, 0, 0, 0]


def test_t2_self_aliasing_strides_are_a_store_conflict() -> None:
    err = _fails("t2_alias_store.ktir", "store-conflict", 7, C=np.zeros((2, 2), np.float32), v=1.0)
    assert err.coordinate == (1, 0) and "strides [1, 1]" in err.message


def test_t2_aliasing_strides_are_fine_for_loads_and_for_boxes_they_keep_apart() -> None:
    text = (REPROS / "t2_alias_store.ktir").read_text()
    # a 1x2 tile of the same aliasing view reaches two distinct elements
    narrow = text.replace("-d0 + 1 >= 0, d1", "-d0 >= 0, d1").replace("2x2xindex", "1x2xindex").replace(
        "dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>", "dense<[[1.0, 2.0]]> : tensor<1x2xf32>").replace(
        "ktdp.store %x, %t : tensor<2x2xf32>, !ktdp.access_tile<1x2xindex>", "ktdp.store %x, %t : tensor<1x2xf32>, !ktdp.access_tile<1x2xindex>")
    out = ri.run(ktir.parse(narrow), args={"C": np.zeros((2, 2), np.float32), "v": 1.0})
    assert out.outputs["C"].reshape(-1).tolist() == [1.0, 2.0, 0.0, 0.0]


@pytest.mark.parametrize(("offset", "fails"), [(4, False), (5, True)])
def test_t13b_out_of_view_is_reported_where_the_tile_is_constructed(offset: int, fails: bool) -> None:
    # memory.md, access tiles: constructing a tile with a coordinate outside the view is
    # erroneous whether or not the tile is used
    args = {"C": np.zeros(8, np.float32), "o": offset}
    if fails:
        err = _fails("t13b_noload.ktir", "out-of-view", 5, **args)
        assert err.coordinate == (8,)
    else:
        ri.run(_module("t13b_noload.ktir"), args=args)


def test_t28_an_inter_tile_op_run_by_some_tiles_only_is_a_deadlock() -> None:
    err = _fails("t28_deadlock.ktir", "deadlock", 12, O=np.zeros(8, np.float32))
    assert "tile 0 executed this op 1 time but tile 1 executed it 0 times" in err.message


def test_t29b_different_iteration_counts_are_a_deadlock() -> None:
    err = _fails("t29b.ktir", "deadlock", 12)
    assert "2 times" in err.message and "1 time" in err.message
