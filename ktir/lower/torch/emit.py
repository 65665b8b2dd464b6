"""Assemble the program: partition the graph, build the module (ktir.builder), print and verify it, collect weights."""

from __future__ import annotations

import re
import time
from typing import Any

from ktir.ir.operation import Module
from ktir.lower.torch.errors import TorchLoweringError
from ktir.lower.torch.graph import partition
from ktir.lower.torch.program import Program, build_manifest
from ktir.lower.torch.work import scratchpad
from ktir.syntax.printer import print_module


def target_cores(target: str) -> int:
    from ktir.targets import load_target

    try:
        return int(load_target(target).tiles.count.value)
    except Exception as e:  # an unknown name or a bad target file: one line for the user
        raise TorchLoweringError(f"target {target}: {e}") from None


def target_scratchpad(target: str) -> int:
    """Bytes of a tile's scratchpad: every kernel is tiled to fit them (work.fitted)."""
    from ktir.targets import scratchpad_bytes

    try:
        return int(scratchpad_bytes(target))
    except Exception as e:  # noqa: BLE001 - as target_cores
        raise TorchLoweringError(f"target {target}: {e}") from None


def emit_program(ep: Any, *, target: str, verify: bool, name: str) -> Program:
    name = re.sub(r"[^A-Za-z0-9_]", "_", name) or "program"
    t0 = time.perf_counter()
    cores = target_cores(target)
    with scratchpad(target_scratchpad(target)):
        graph = partition(ep, cores)
    t1 = time.perf_counter()
    output_names = [s.arg.name if hasattr(s.arg, "name") else f"out{i}" for i, s in enumerate(ep.graph_signature.output_specs)]
    # an input the program updates in place: its new value is an output that names it
    updates = [str(s.target) if s.kind.name == "USER_INPUT_MUTATION" else None for s in ep.graph_signature.output_specs]
    header = [
        f"// {name}: lowered from PyTorch (torch.export, core ATen) by ktir.lower.torch for target {target} ({cores} cores).",
        f"// {len(graph.kernels)} kernels, run in order; buffers and order in {name}.manifest.json.",
    ]
    built = Module(operations=[k.kernel.function(k.comment) for k in graph.kernels])
    graph.aliases.install(built)
    if built.alias_order:
        built.alias_comments[built.alias_order[0]] = header
    elif built.operations:
        built.operations[0].comments[:0] = header
    text = print_module(built)
    manifest = build_manifest(graph, name, target, cores, output_names, updates)
    weights = {b.name: b.data for b in graph.buffers.values() if b.data is not None}
    t2 = time.perf_counter()
    program = Program(text, manifest, weights)
    from ktir.lower.torch.sdsc import Spec, to_json

    program.sdsc = {k.kernel.name: to_json(k.sdsc, f"{i}_{k.sdsc.opfunc}") for i, k in enumerate(graph.kernels) if isinstance(k.sdsc, Spec)}
    program.sdsc_buffers = {k.kernel.name: [t.buffer for t in k.sdsc.tensors] for k in graph.kernels if isinstance(k.sdsc, Spec)}
    if verify:
        from ktir.verify import validate_text

        module, diagnostics = validate_text(text, f"{name}.ktir")
        errors = [d for d in diagnostics if d.severity == "error"]
        if errors:
            d = errors[0]
            line = text.splitlines()[d.line - 1] if 0 < d.line <= len(text.splitlines()) else ""
            raise AssertionError(f"the lowering produced invalid KTIR (a bug in ktir.lower.torch): line {d.line}: [{d.id}] {d.message}\n  {line.strip()}")
        if module != built:  # the printed text must say what was built
            raise AssertionError("the lowering built a module its printed text does not reproduce (a bug in ktir.lower.torch)")
        program._module = module
    t3 = time.perf_counter()
    program.timings = {"partition": t1 - t0, "print": t2 - t1, "verify": t3 - t2}
    return program
