"""Whatever `ktir validate` accepts, the reference interpreter runs: over every valid program in
the repository, every function with a body compiles in the interpreter (where it would refuse
a construct it does not execute, `runtime.unsupported`, before running anything), unless the
verifier warned that the program uses an op KTIR does not define (`op.unknown`: such an op has
no meaning, spec/differences.md "_Ext auxiliary ops"). A refusal of anything else means a rule
belongs in the verifier (or the interpreter lacks an op)."""

from __future__ import annotations

from pathlib import Path

import pytest

import reference_interp.executor  # noqa: F401 - registers the op implementations
from ktir.ir import types as ty
from ktir.verify import validate_text
from reference_interp.compiler import Program, reject_semantics_free
from reference_interp.errors import CompileError, KtirRuntimeError
from reference_interp.runtime import Options

ROOT = Path(__file__).resolve().parents[2]
_SKIP = {"site", "build", "node_modules", "ci-artifacts", "invalid", "invalid_syntax"}


def _programs() -> list[Path]:
    found = []
    for p in sorted(p for ext in ("*.ktir", "*.mlir") for p in ROOT.rglob(ext)):
        parts = p.relative_to(ROOT).parts
        if not _SKIP.intersection(parts) and not any(x.startswith(".") for x in parts):
            found.append(p)
    return found


def test_every_valid_program_compiles_in_the_interpreter() -> None:
    refused, compiled, unknown = [], 0, 0
    for path in _programs():
        module, diagnostics = validate_text(path.read_text(), str(path))
        if module is None or any(d.severity == "error" for d in diagnostics):
            continue
        undefined_ops = any(d.id == "op.unknown" for d in diagnostics)
        program = Program(module)
        for name, fn in program.funcs.items():
            if not (fn.regions and fn.regions[0].blocks):
                continue
            try:
                reject_semantics_free(fn, [ty.unaliased(a.type, module.type_aliases) for a in fn.regions[0].blocks[0].arguments])
                program.function(name, Options())
                compiled += 1
            except (CompileError, KtirRuntimeError) as e:
                if undefined_ops:
                    unknown += 1
                    continue
                refused.append(f"{path.relative_to(ROOT)} @{name}: {str(e).splitlines()[0]}")
    assert not refused, f"{len(refused)} functions validate but the interpreter refuses them:\n" + "\n".join(refused[:20])
    assert compiled > 1000  # the corpus is really read
    print(f"\n{compiled} functions compile; {unknown} use ops KTIR does not define (op.unknown)")


@pytest.mark.parametrize("text", [
    # a coordinate set with fewer symbols than the view has dynamic sizes (they bind the first ones)
    "func.func @f(%a: index, %n: index, %m: index) {\n"
    "  %v = ktdp.construct_memory_view %a, sizes: [%n, %m], strides: [%m, 1] {coordinate_set = "
    "affine_set<(d0, d1)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0, d1 >= 0, -d1 + 7 >= 0)>, "
    "memory_space = #ktdp.memory_space<global>} : memref<?x?xf16>\n  return\n}\n",
    # one tile id on a 2-D grid, and {dim = 1}
    "func.func @g() attributes {grid = [4, 2]} {\n  %i = ktdp.get_compute_tile_id : index\n"
    "  %j = ktdp.get_compute_tile_id {dim = 1} : index\n  return\n}\n",
])
def test_what_the_interpreter_used_to_refuse_is_valid_and_compiles(text: str) -> None:
    module, diagnostics = validate_text(text, "t.ktir")
    assert module is not None and not [d for d in diagnostics if d.severity == "error"]
    program = Program(module)
    for name in program.funcs:
        program.function(name, Options())
