"""The guides cannot drift from what the tools do: their commands run, their figures are
current, their kernels are canonical, their Markdown renders as written.

- A ```` ```{.sh .run} ```` block of a guide is run line by line (in a scratch directory where
  `examples/` and `tests/` are the repository's, with `ktir` this checkout's); every line must
  exit 0, and every number in a line's trailing `# comment` must appear in what it printed.
  A ```` ```{.text .output} ```` block right after it must appear in what the block printed
  (each of its lines, box drawing and spacing aside; a `...` line skips).
- Every complete kernel the guides show (a ktir block with a `grid`) is in canonical form,
  as `ktir fmt --check` requires.
- Lists render as lists on the site (Python-Markdown needs a blank line before a list and
  four spaces for a nested one; a list marker left in a paragraph is a rendering bug).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from docs_support import DOCS, ROOT, SPEC

from ktir.docsgen.blocks import FencedBlock, fenced_blocks

GUIDES = sorted((DOCS / "guides").glob("*.md"))
_BOX = re.compile(r"[│┃┏┓┗┛┡┩└┘┌┐├┤┼━─┳┻╇┴┬╋]")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _flat(text: str) -> str:
    return " ".join(_BOX.sub(" ", text).split())


def _run_blocks() -> list[tuple[FencedBlock, FencedBlock | None]]:
    found = []
    for path in GUIDES:
        blocks = fenced_blocks(path.read_text(encoding="utf-8"), path.relative_to(ROOT))
        for i, b in enumerate(blocks):
            if b.language == "sh" and "run" in b.classes:
                after = blocks[i + 1] if i + 1 < len(blocks) and "output" in blocks[i + 1].classes else None
                found.append((b, after))
    return found


def _commands(code: str) -> list[tuple[str, str]]:
    """(command, trailing comment) per logical line (backslash continuations joined)."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in code.splitlines():
        if pending:
            line = pending + " " + line.strip()
            pending = ""
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1]
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        command, _, comment = line.partition("   #")
        out.append((command.strip(), comment.strip()))
    return out


@pytest.fixture
def scratch(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    for name in ("examples", "tests", "benchmarks"):
        (tmp_path / name).symlink_to(ROOT / name)
    bin_dir = tmp_path / ".bin"
    bin_dir.mkdir()
    (bin_dir / "ktir").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ktir.cli "$@"\n')
    (bin_dir / "ktir").chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    return tmp_path, env


@pytest.mark.parametrize("block,output", _run_blocks(), ids=lambda b: b.where if isinstance(b, FencedBlock) else "")
def test_a_guides_commands_run_and_print_what_it_shows(block: FencedBlock, output: FencedBlock | None,
                                                       scratch: tuple[Path, dict[str, str]]) -> None:
    cwd, env = scratch
    printed = ""
    for command, comment in _commands(block.code):
        done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        said = done.stdout + done.stderr
        assert done.returncode == 0, f"{block.where}: `{command}` exited {done.returncode}:\n{said[-3000:]}"
        for number in _NUMBER.findall(comment):
            assert number in said, f"{block.where}: `{command}` no longer prints {number} (the comment says: {comment})"
        printed += said
    if output is not None:
        flat = _flat(printed)
        for line in output.code.splitlines():
            if line.strip() and line.strip() != "...":
                assert _flat(line) in flat, f"{output.where}: the guide shows\n{line}\nbut the command printed\n{printed[-3000:]}"


def test_some_guide_blocks_run() -> None:
    """The run guide's commands are among those run (the test above is not vacuous)."""
    where = {b.where for b, _ in _run_blocks()}
    assert any("run.md" in w for w in where) and any(out is not None for _, out in _run_blocks())


def _kernels() -> list[FencedBlock]:
    blocks = []
    for path in sorted(DOCS.rglob("*.md")):  # the guides' and the home page's (the spec's show forms side by side)
        blocks += [b for b in fenced_blocks(path.read_text(encoding="utf-8"), path.relative_to(ROOT))
                   if b.language == "ktir" and "grid = [" in b.code and "legacy" not in b.classes]
    return blocks


@pytest.mark.parametrize("block", _kernels(), ids=lambda b: b.where)
def test_the_kernels_the_docs_show_are_canonical(block: FencedBlock) -> None:
    from ktir.syntax.parser import parse
    from ktir.syntax.printer import print_module

    assert print_module(parse(block.code, block.where)) == block.code, (
        f"{block.where}: not in canonical form (what `ktir fmt --check` wants)")


def test_the_write_a_kernel_guides_kernel_is_among_them() -> None:
    assert any("write-a-kernel.md" in b.where for b in _kernels())


@pytest.mark.parametrize("path", sorted([*DOCS.rglob("*.md"), *SPEC.rglob("*.md")]), ids=lambda p: str(p.relative_to(ROOT)))
def test_lists_render_as_lists(path: Path) -> None:
    markdown = pytest.importorskip("markdown", reason="the docs extra is not installed (pip install -e '.[docs]')")
    pytest.importorskip("pymdownx", reason="the docs extra is not installed (pip install -e '.[docs]')")
    html = markdown.markdown(path.read_text(encoding="utf-8"),
                             extensions=["tables", "attr_list", "md_in_html", "def_list", "admonition", "footnotes",
                                         "pymdownx.superfences"])
    html = re.sub(r"<pre.*?</pre>", "", html, flags=re.S)
    stray = [m.group(0) for m in re.finditer(r"(?:<p>|\n)[ \t]*(?:[-*]|\d+\.) [^\n]{0,40}", html)]
    assert not stray, f"list items rendered as text (indent nested lists by 4, blank line before a list): {stray[:3]}"


def test_the_load_and_store_pages_show_a_plain_load_and_store() -> None:
    """The executed example of ktdp.load/store uses no op beyond reaching memory (it was a bitcast)."""
    import ktir
    from ktir.docsgen.examples import collect

    plumbing = {"func.func", "func.return", "arith.constant", "ktdp.get_compute_tile_id", "ktdp.construct_memory_view",
                "ktdp.construct_access_tile", "ktdp.load", "ktdp.store"}
    examples = collect()
    for op in ("ktdp.load", "ktdp.store"):
        module = ktir.parse(examples[op].kernel)
        assert {o.name for o in module.walk()} <= plumbing, (op, examples[op].case_id)
