"""Parse and parse+print throughput on a generated 20,000-line module.

Prints lines/second for each, and the ratio against a baseline measured in the same run:
tokenising the same text with one compiled regex (`re.findall`), the floor any Python
parser of this text pays. `parse` is what `ktir.parse` does (the recursive-descent fast
path, see ktir/syntax/fastparse.py); `parse, grammar only` runs the normative LALR grammar
alone (what `parse` falls back to on forms the fast path leaves to it, and on errors).
Each figure is the best of --repeat runs, interleaved, in wall-clock seconds and, in
brackets, CPU seconds of this process (steadier on a loaded machine).
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


def generate(lines: int) -> str:
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
        for template in _BODY:
            out.append("  " + template.format(i=i))
        i += 1
    out += ["  func.return", "}"]
    return "\n".join(out) + "\n"


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
    n = text.count("\n")
    ktir.parse("func.func @warm() { return }")  # load the parser tables once
    tokens = re.compile(r"%[\w$.#-]+|[A-Za-z_][\w$.]*|[0-9]+|->|\S")
    module = ktir.parse(text)
    assert module == parse(text, fast=False), "the two parse paths disagree"
    jobs: dict[str, Callable[[], object]] = {
        "baseline regex tokenise": lambda: tokens.findall(text),
        "parse": lambda: ktir.parse(text),
        "parse, grammar only": lambda: parse(text, fast=False),
        "print": lambda: ktir.print_module(module),
    }
    best = best_of(jobs, args.repeat)
    best["parse + print"] = (best["parse"][0] + best["print"][0], best["parse"][1] + best["print"][1])
    base_wall, base_cpu = best["baseline regex tokenise"]
    print(f"module: {n} lines, {len(text)} bytes; best of {args.repeat}, wall-clock [CPU]")
    for label, (wall, cpu) in best.items():
        ratio = "" if label == "print" else f"  ({wall / base_wall:5.1f}x baseline [{cpu / base_cpu:5.1f}x])"
        print(f"{label:24}: {n / wall:10,.0f} lines/s [{n / cpu:10,.0f}]{ratio}")


if __name__ == "__main__":
    main()
