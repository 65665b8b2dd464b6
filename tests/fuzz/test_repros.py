"""Regression tests for the inputs the corpus-mutation fuzzer found (issue 18).

Each file in `invalid/` is named for the failure it once caused (an uncaught exception in
the verifier, a hang in the parser, a print the parser rejected, a print that was not a
fixpoint). Each must now either fail to parse with a located `error[ID]`, or parse, verify
to exactly the listed diagnostics (no exception) and print to text that re-parses to an
equal module and prints identically.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import ktir
from ktir.syntax.diagnostics import render
from ktir.verify import verify

HERE = Path(__file__).parent / "invalid"

# file -> (line, column, message start) of the parse error
PARSE_ERRORS = {
    # `%1:9223372036854775808 = ...`: the result group is checked against the op before it
    # is expanded (it used to build 2**63 names)
    "hang-d4f57a0fca.ktir": (53, 5, "'ktdp.inter_tile_reduce' defines 2 result(s) but 9223372036854775808 name(s)"),
    # a function body opening with `^bb0(...)`: its arguments come from the signature
    "roundtrip-unstable-38e17b7513.ktir": (49, 5, "the entry block of a function takes its arguments from the signature"),
    # once a verifier crash on a rank-201 view; ranks are now bounded by numpy's 64 (issue 33)
    "exception-41c24bd762.ktir": (4, 41, "a shape of rank 201: at most 64 dimensions"),
    # a dense array element outside its type (MLIR: "integer constant out of range")
    "roundtrip-reject-98fad2d2d2.ktir": (13, 29, "integer constant 9223372036854775808 out of range of i32"),
    # static sizes are int64 (the generic form reads them back as array<i64: ...>)
    "exception-672efe7a66.ktir": (4, 14, "integer constant 1180591620717411303424 out of range of i64"),
}

# file -> the verifier's error IDs
VERIFY_ERRORS = {
    # the view's rank or coordinate_set does not match the access tile: a note, not a crash
    "exception-4e18c42e93.ktir": ["ktdp.load.C2", "ssa.redefined", "ssa.type", "ssa.undefined"],
    # a static size of kDynamic with no dynamic-size operand
    "exception-b3bc46bb7c.ktir": ["ktdp.construct_memory_view.C2"],
    # generic forms whose counts no custom form can spell: printed in generic form
    "roundtrip-reject-3100b1f213.ktir": ["op.operands", "op.results", "region.count"],
    "roundtrip-reject-5dd4c45bbb.ktir": ["ktdp.get_compute_tile_id.C1"],
    "roundtrip-reject-88fb7cb0a2.ktir": ["ktdp.get_compute_tile_id.C1"],
    "roundtrip-reject-acdeb8e8c2.ktir": ["op.results", "ssa.undefined"],
    "roundtrip-reject-af5999dc24.ktir": ["scf.forall.C1"],
    "roundtrip-reject-ca12d56688.ktir": ["ktdp.get_compute_tile_id.C1"],
}


def test_every_repro_has_an_expectation() -> None:
    names = {p.name for p in HERE.glob("*.ktir")}
    assert names == set(PARSE_ERRORS) | set(VERIFY_ERRORS)


@pytest.mark.parametrize("name", sorted(PARSE_ERRORS))
def test_repro_is_a_located_parse_error(name: str) -> None:
    source = (HERE / name).read_text()
    with pytest.raises(ktir.ParseError) as info:
        ktir.parse(source, name)
    line, column, message = PARSE_ERRORS[name]
    err = info.value
    assert (err.line, err.column) == (line, column)
    assert err.message.startswith(message), err.message
    text = render(err.diagnostics[0], source)
    assert text.startswith(f"{name}:{line}:{column}: error[syntax]: ")


@pytest.mark.parametrize("name", sorted(VERIFY_ERRORS))
def test_repro_verifies_and_round_trips(name: str) -> None:
    source = (HERE / name).read_text()
    module = ktir.parse(source, name)
    errors = sorted({d.id for d in verify(module, name) if d.severity == "error"})
    assert errors == VERIFY_ERRORS[name]
    text = ktir.print_module(module)
    again = ktir.parse(text, name + " (printed)")
    assert again == module
    assert ktir.print_module(again) == text
