"""Generate valid kernels, inject exactly one defect, and check `validate` reports it on
the right line with the right rule ID (and that the clean kernel validates)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ktir.verify import validate_text

_BINARY = ["arith.addf", "arith.subf", "arith.mulf", "arith.maximumf", "arith.minimumf"]
_UNARY = ["math.exp", "math.tanh", "arith.negf", "math.absf"]


@st.composite
def kernels(draw):  # type: ignore[no-untyped-def]
    rows = draw(st.sampled_from([2, 4, 8]))
    cols = draw(st.sampled_from([16, 64]))
    grid = draw(st.sampled_from([1, 2, 4]))
    chain = draw(st.lists(st.sampled_from(_BINARY + _UNARY), min_size=1, max_size=5))
    defect = draw(st.sampled_from(["none", "shape", "type", "out_of_view", "undefined"]))
    target = draw(st.integers(0, len(chain) - 1))
    return rows, cols, grid, chain, defect, target


def build(rows: int, cols: int, grid: int, chain: list[str], defect: str, target: int) -> tuple[str, int, str | None]:
    """The kernel text, the line of the defect (0 if none) and the expected rule ID."""
    total = rows * grid
    tile = f"tensor<{rows}x{cols}xf16>"
    tile_t = f"!ktdp.access_tile<{rows}x{cols}xindex>"
    lines = [
        f"#view = affine_set<(d0, d1) : (d0 >= 0, -d0 + {total - 1} >= 0, d1 >= 0, -d1 + {cols - 1} >= 0)>",
        f"#tile = affine_set<(d0, d1) : (d0 >= 0, -d0 + {rows - 1} >= 0, d1 >= 0, -d1 + {cols - 1} >= 0)>",
        "#id = affine_map<(d0, d1) -> (d0, d1)>",
        f"func.func @k(%A: index, %B: index) attributes {{grid = [{grid}]}} {{",
        "  %t = ktdp.get_compute_tile_id : index",
        "  %c0 = arith.constant 0 : index",
        f"  %a = ktdp.construct_memory_view %A, sizes: [{total}, {cols}], strides: [{cols}, 1] {{coordinate_set = #view, memory_space = #ktdp.memory_space<global>}} : memref<{total}x{cols}xf16>",
        f"  %b = ktdp.construct_memory_view %B, sizes: [{total}, {cols}], strides: [{cols}, 1] {{coordinate_set = #view, memory_space = #ktdp.memory_space<global>}} : memref<{total}x{cols}xf16>",
    ]
    stride = rows + 1 if defect == "out_of_view" else rows
    tile_line = len(lines) + 1
    lines.append(f"  %ta = ktdp.construct_access_tile %a[%t * {stride}, %c0] {{access_tile_order = #id, access_tile_set = #tile}} : memref<{total}x{cols}xf16> -> {tile_t}")
    lines.append(f"  %tb = ktdp.construct_access_tile %b[%t * {rows}, %c0] {{access_tile_order = #id, access_tile_set = #tile}} : memref<{total}x{cols}xf16> -> {tile_t}")
    load_line = len(lines) + 1
    load_type = f"tensor<{rows}x{cols * 2}xf16>" if defect == "shape" else tile
    lines.append(f"  %x0 = ktdp.load %ta : {tile_t} -> {load_type}")
    line, ident = 0, None
    if defect == "shape":
        line, ident = load_line, "ktdp.load.C1"
    if defect == "out_of_view" and grid > 1:
        line, ident = tile_line, "ktdp.construct_access_tile.C7"
    current = "%x0"
    for i, name in enumerate(chain):
        operand = "%nope" if defect == "undefined" and i == target else current
        use_type = f"tensor<{rows}x{cols}xf32>" if defect == "type" and i == target else tile
        args = f"{operand}, {current}" if name in _BINARY else operand
        lines.append(f"  %x{i + 1} = {name} {args} : {use_type}")
        if defect == "undefined" and i == target:
            line, ident = len(lines), "ssa.undefined"
        if defect == "type" and i == target:
            line, ident = len(lines), "ssa.type"
        current = f"%x{i + 1}"
        if defect == "type" and i == target:
            break  # later ops would repeat the same mismatch
    lines.append(f"  ktdp.store {current}, %tb : {tile}, {tile_t}" if defect != "type" else "  return")
    if defect != "type":
        lines.append("  return")
    lines.append("}")
    return "\n".join(lines) + "\n", line, ident


@settings(max_examples=120, deadline=None)
@given(kernels())
def test_one_defect_is_reported_where_it_is(params) -> None:  # type: ignore[no-untyped-def]
    text, line, ident = build(*params)
    _, diagnostics = validate_text(text, "k.ktir")
    errors = [(d.line, d.id) for d in diagnostics if d.severity == "error"]
    if ident is None:
        assert errors == [], text
    else:
        assert (line, ident) in errors, (errors, text)
        # later errors may follow from the defect, but none comes before it
        assert min(found_line for found_line, _ in errors) == line, (errors, text)
