"""docs/guides/lower-from-pytorch.md: its example runs as written and prints what the page shows."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ktir.cli import main  # noqa: E402

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guides" / "lower-from-pytorch.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", GUIDE.read_text(), re.S)


def test_guide_example_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    python = _blocks("python")
    module_src = next(b for b in python if b.startswith("# block.py"))
    (tmp_path / "block.py").write_text(module_src)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("block", None)
    namespace: dict[str, object] = {}
    exec(next(b for b in python if "from_torch(model, (x,)" in b), namespace)  # noqa: S102
    listing = capsys.readouterr().out.strip()
    assert listing == _blocks("text")[0].strip()
    program = namespace["program"]
    shown = _blocks("mlir")[0]
    head = shown.splitlines()[0]
    assert head in program.text  # type: ignore[attr-defined]
    for line in shown.splitlines():
        if line.strip() != "...":
            assert line in program.text, line  # type: ignore[attr-defined]
    exec(_blocks("python")[2], namespace)  # noqa: S102  (run and compare)
    err = float(capsys.readouterr().out.strip())
    assert err < 1e-5

    # the command-line section
    import block  # type: ignore[import-not-found]

    torch.export.save(torch.export.export(block.model, (block.x,)), "block.pt2")
    assert main(["lower", "torch", "block.pt2", "-o", "block.ktir"]) == 0
    assert main(["run-program", "block.manifest.json", "--random-inputs", "0", "--out", "out.npz"]) == 0
    with np.load("out.npz") as out:
        assert out[out.files[0]].shape == (1, 64, 128)
