"""A grid too large to run is a located error before anything is allocated (issue 28:
`grid = [10^12]` used to raise MemoryError from the race tracker's vector clocks)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import reference_interp as ri
from ktir.builder import Builder, located
from ktir.cli import main
from ktir.ir import types as ty
from ktir.syntax.printer import print_module


def _kernel(grid: list[int]) -> str:
    b = Builder()
    with b.func("k", [("x", ty.IndexType())], grid=grid):
        b.tile_id(len(grid))
        b.func_return()
    return print_module(located(b.module, "grid.ktir"))


@pytest.mark.parametrize("grid", [[10**12], [4097], [65536, 65536], [2, 2049]])
def test_a_grid_beyond_the_tile_limit_is_a_located_error(grid: list[int]) -> None:
    import ktir

    m = ktir.parse(_kernel(grid), "grid.ktir")
    with pytest.raises(ri.KtirRuntimeError) as info:
        ri.run(m, args={"x": np.zeros(4, np.float32)})
    e = info.value
    assert e.kind == "memory-limit" and "at most 4096" in e.message
    assert e.op is not None and e.op.name == "func.func" and e.diagnostics[0].line > 0


def test_the_largest_grid_runs() -> None:
    import ktir

    r = ri.run(ktir.parse(_kernel([64, 64]), "grid.ktir"), args={"x": np.zeros(4, np.float32)})
    assert len(r.stats) == 4096


def test_the_command_line_prints_file_line_and_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "grid.ktir"
    path.write_text(_kernel([10**12]))
    assert main(["run", str(path), "--arg", "x=3"]) == 1
    err = capsys.readouterr().err
    assert f"{path}:1:1:" in err and "error[runtime.memory-limit]" in err and "Traceback" not in err
