"""The torch.compile guide (docs/guides/torch-compile.md) says what the code does: every
option is in its table with its default, and the example's report rows and timeline picture
are what the example prints and draws today."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from ktir.torch_backend.options import BackendOptions  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guides" / "torch-compile.md"


def _options_table() -> dict[str, str]:
    rows = re.findall(r"^\| `(\w+)` \| `?([^|`]+)`? \|", GUIDE.read_text(), flags=re.M)
    return {name: default.strip() for name, default in rows}


def test_every_option_is_documented_with_its_default() -> None:
    table = _options_table()
    assert set(table) == set(BackendOptions.model_fields), set(table) ^ set(BackendOptions.model_fields)
    for name, field in BackendOptions.model_fields.items():
        assert table[name] == repr(field.default).replace("'", '"'), (name, table[name], field.default)


@pytest.mark.slow
def test_the_example_prints_the_guides_rows_and_draws_its_picture(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "torch" / "compile_llama.py"), "--scheduler", "none",
                           "--dump", str(tmp_path)], capture_output=True, text=True, timeout=1800, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    guide = GUIDE.read_text()
    block = guide.split("```text\n", 1)[1].split("```", 1)[0]
    rows = [line for line in block.splitlines() if re.match(r"k\d+_", line)]
    assert rows and all(row in proc.stdout for row in rows), proc.stdout
    head = re.sub(r"lowered in [\d.]+ s, scheduled in [\d.]+ s", "", block.splitlines()[0])
    assert head in re.sub(r"lowered in [\d.]+ s, scheduled in [\d.]+ s", "", proc.stdout)
    drawn = (tmp_path / "graph0" / "timeline.svg").read_text()
    assert drawn == (ROOT / "docs" / "guides" / "images" / "torch_compile_timeline.svg").read_text()
