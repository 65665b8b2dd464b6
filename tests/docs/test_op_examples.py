"""Every op page carries an executed example with values (issue 20): a `{.ktir .run}` block
that uses the op, followed by its inputs and expected outputs. The docs block test runs them."""

from __future__ import annotations

import pytest
from docs_support import generated_pages

import ktir
from ktir.dialects.registry import OPS
from ktir.docsgen.blocks import fenced_blocks
from ktir.docsgen.pages import op_page_path


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_page_has_an_executed_example_using_the_op(name: str) -> None:
    page = generated_pages()[op_page_path(name)]
    blocks = fenced_blocks(page)
    runs = [i for i, b in enumerate(blocks) if b.language == "ktir" and "run" in b.classes]
    assert runs, f"{name}: no executed example"
    kernel = blocks[runs[0]]
    expected = blocks[runs[0] + 1]
    assert expected.language == "python" and "ktir-expected" in expected.classes
    assert "np.array(" in expected.code and "expected = {" in expected.code
    used = {op.name for op in ktir.parse(kernel.code).walk()}
    used |= {"builtin.module"}  # implicit around every file
    assert name in used or OPS[name].aliases and used & set(OPS[name].aliases), f"{name}: the example does not use the op"


def test_status_table_counts_every_op() -> None:
    status = generated_pages()["status.md"]
    assert f"({len(OPS)}/{len(OPS)} ops)" in status
    assert status.count("#executed-example)") == len(OPS)
