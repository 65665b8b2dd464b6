"""Parse and parse+print throughput on a generated 20,000-line module.

Prints lines/second for each, and ratios against two baselines measured in the same run:

- `baseline regex tokenise`: tokenising the same text with one compiled regex
  (`re.findall`), the floor any Python parser of this text pays;
- `upstream-style regex parse`: reading the text the way the regex parser of the upstream
  Python interpreter (torch-spyre/ktir-cpu) does, line by line, one regex per op for
  results, name, operands, attributes and types, kept as strings in a dict per op. It is
  lighter than that parser (no multi-line joining, no region detection, no per-dialect
  parsing, no type objects), so it is a hard bar, not a fair one.

`parse` is what `ktir.parse` does: the recursive-descent fast path (ktir/syntax/
fastparse.py), which copies an op whose line repeats an earlier one's tokens with other
SSA names, as the module's 10 line forms do. `parse, no line repeats` reads a module of
the same size and forms with every number and shape varied, so that no op is copied (its
lines are a little longer, and every type is new). `parse, grammar only` runs the
normative LALR grammar alone (what `parse` falls back to on forms the fast path leaves to
it, and on errors). Each figure is the best of --repeat runs, interleaved, in wall-clock
seconds and, in brackets, CPU seconds of this process (steadier on a loaded machine).

Run: `python benchmarks/bench_parse.py [--lines N] [--repeat N]`.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable

import ktir
from ktir.syntax.parser import parse

_BODY = [
    "%v{i} = ktdp.construct_memory_view %a, sizes: [256, 64], strides: [64, 1] {{coordinate_set = #set, memory_space = #ktdp.memory_space<global>}} : memref<256x64xf16>",
    "%t{i} = ktdp.construct_access_tile %v{i}[%id * 8 + %c0, %c0] {{access_tile_order = #id2, access_tile_set = #tile}} : memref<256x64xf16> -> !ktdp.access_tile<8x64xindex>",
    "%x{i} = ktdp.load %t{i} : !ktdp.access_tile<8x64xindex> -> tensor<8x64xf16>",
    "%y{i} = arith.addf %x{i}, %x{i} : tensor<8x64xf16>",
    "%z{i} = math.exp %y{i} : tensor<8x64xf16>",
    "%e{i} = tensor.empty() : tensor<8x64xf16>",
    "%m{i} = linalg.mul ins(%z{i}, %x{i} : tensor<8x64xf16>, tensor<8x64xf16>) outs(%e{i} : tensor<8x64xf16>) -> tensor<8x64xf16>",
    "%k{i} = arith.constant 4 : index",
    "%p{i} = arith.cmpi slt, %k{i}, %id : index",
    "ktdp.store %m{i}, %t{i} : tensor<8x64xf16>, !ktdp.access_tile<8x64xindex>",
]


# The same body with every number and shape taken from the repetition's index: no op line
# repeats another's tokens (SSA names aside), so `parse` cannot copy an op it has read.
_DISTINCT_BODY = [
    "%v{i} = ktdp.construct_memory_view %a, sizes: [256, {w}], strides: [{w}, 1] {{coordinate_set = #set, memory_space = #ktdp.memory_space<global>}} : memref<256x{w}xf16>",
    "%t{i} = ktdp.construct_access_tile %v{i}[%id * {i} + %c0, %c0] {{access_tile_order = #id2, access_tile_set = #tile}} : memref<256x{w}xf16> -> !ktdp.access_tile<8x{w}xindex>",
    "%x{i} = ktdp.load %t{i} : !ktdp.access_tile<8x{w}xindex> -> tensor<8x{w}xf16>",
    "%y{i} = arith.addf %x{i}, %x{i} : tensor<8x{w}xf16>",
    "%z{i} = math.exp %y{i} : tensor<8x{w}xf16>",
    "%e{i} = tensor.empty() : tensor<8x{w}xf16>",
    "%m{i} = linalg.mul ins(%z{i}, %x{i} : tensor<8x{w}xf16>, tensor<8x{w}xf16>) outs(%e{i} : tensor<8x{w}xf16>) -> tensor<8x{w}xf16>",
    "%k{i} = arith.constant {i} : index",
    "%p{i} = arith.cmpi slt, %k{i}, %c{i} : index",
    "ktdp.store %m{i}, %t{i} {{n = {i} : i64}} : tensor<8x{w}xf16>, !ktdp.access_tile<8x{w}xindex>",
]


def generate(lines: int, distinct: bool = False) -> str:
    body = _DISTINCT_BODY if distinct else _BODY
    out = [
        "#set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 255 >= 0, d1 >= 0, -d1 + 63 >= 0)>",
        "#tile = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 63 >= 0)>",
        "#id2 = affine_map<(d0, d1) -> (d0, d1)>",
        "func.func @big(%a: index) attributes {grid = [32]} {",
        "  %id = ktdp.get_compute_tile_id : index",
        "  %c0 = arith.constant 0 : index",
    ]
    i = 0
    while len(out) < lines - 2:
        for template in body:
            out.append("  " + template.format(i=i, w=64 + i))
        i += 1
    out += ["  func.return", "}"]
    return "\n".join(out) + "\n"


_OP_LINE = re.compile(r"\s*(?:(%[^=]*?)\s*=\s*)?([A-Za-z_][\w.]*)\s*(.*?)\s*(?::\s*([^:{}]*))?$")
_SSA = re.compile(r"%[\w$.#-]+")
_ATTRS = re.compile(r"\{([^{}]*)\}")
_TYPE_SPLIT = re.compile(r",\s*(?![^<>]*>)")


def upstream_style_parse(text: str) -> list[dict[str, object]]:
    """One dict per op line, its pieces as strings (see the module docstring)."""
    ops: list[dict[str, object]] = []
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped or stripped[0] in "#}/":
            continue
        m = _OP_LINE.match(stripped)
        if m is None:
            continue
        results, name, body, types = m.groups()
        attrs = {}
        block = _ATTRS.search(body)
        if block is not None:
            for entry in block.group(1).split(","):
                key, _, value = entry.partition("=")
                attrs[key.strip()] = value.strip()
        ops.append({
            "name": name,
            "results": _SSA.findall(results or ""),
            "operands": _SSA.findall(body if block is None else body[: block.start()]),
            "attributes": attrs,
            "types": _TYPE_SPLIT.split(types) if types else [],
        })
    return ops


def best_of(jobs: dict[str, Callable[[], object]], repeat: int) -> dict[str, tuple[float, float]]:
    """label -> (best wall seconds, best CPU seconds), the jobs run interleaved."""
    wall: dict[str, list[float]] = {label: [] for label in jobs}
    cpu: dict[str, list[float]] = {label: [] for label in jobs}
    for _ in range(repeat):
        for label, fn in jobs.items():
            w, c = time.perf_counter(), time.process_time()
            fn()
            wall[label].append(time.perf_counter() - w)
            cpu[label].append(time.process_time() - c)
    return {label: (min(wall[label]), min(cpu[label])) for label in jobs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lines", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    text = generate(args.lines)
    distinct = generate(args.lines, distinct=True)
    n = text.count("\n")
    ktir.parse("func.func @warm() { return }")  # load the parser tables once
    tokens = re.compile(r"%[\w$.#-]+|[A-Za-z_][\w$.]*|[0-9]+|->|\S")
    module = ktir.parse(text)
    assert module == parse(text, fast=False), "the two parse paths disagree"
    assert ktir.parse(distinct) == parse(distinct, fast=False), "the two parse paths disagree"
    jobs: dict[str, Callable[[], object]] = {
        "baseline regex tokenise": lambda: tokens.findall(text),
        "upstream-style regex parse": lambda: upstream_style_parse(text),
        "parse": lambda: ktir.parse(text),
        "parse, no line repeats": lambda: ktir.parse(distinct),
        "parse, grammar only": lambda: parse(text, fast=False),
        "print": lambda: ktir.print_module(module),
    }
    best = best_of(jobs, args.repeat)
    best["parse + print"] = (best["parse"][0] + best["print"][0], best["parse"][1] + best["print"][1])
    base_wall, base_cpu = best["baseline regex tokenise"]
    up_wall, up_cpu = best["upstream-style regex parse"]
    print(f"module: {n} lines, {len(text)} bytes; best of {args.repeat}, wall-clock [CPU]")
    print(f"{'':28}{'lines/s':>10} {'[CPU]':>12}  {'time / tokenise':>17}  {'speed / upstream-style':>24}")
    for label, (wall, cpu) in best.items():
        ratio = "" if label == "print" else f"  {wall / base_wall:6.1f}x [{cpu / base_cpu:5.1f}x]"
        upstream = "" if label == "print" else f"  {up_wall / wall:14.2f}x [{up_cpu / cpu:5.2f}x]"
        print(f"{label:28}{n / wall:10,.0f} [{n / cpu:10,.0f}]{ratio}{upstream}")


if __name__ == "__main__":
    main()
